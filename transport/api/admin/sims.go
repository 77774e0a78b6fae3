// Package admin is the operators' tools that are no tenant's resource: the control of the
// simulated networks, which operators (and the drills) change at run time to take one down,
// slow it or pause it. Off unless the node runs on simulated carriers.
//
// The operators' endpoints on a tenant's resources (suspending an account, crediting a wallet,
// reviewing sender IDs, announcing) are with those resources' groups.
package admin

import (
	"context"
	"net/http"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/transport/api"
)

// SimNetwork is one simulated network's settings and what it did so far.
type SimNetwork struct {
	Network        string  `json:"network"`
	LatencyMS      float64 `json:"latency_ms"`
	TPS            float64 `json:"tps"`
	FailureRate    float64 `json:"failure_rate"`
	RejectRate     float64 `json:"reject_rate"`
	ThrottleRate   float64 `json:"throttle_rate"`
	LostAnswerRate float64 `json:"lost_answer_rate"`
	ReceiptDelayMS float64 `json:"receipt_delay_ms"`
	Down           bool    `json:"down"`
	Submits        uint64  `json:"submits"`
	Accepted       uint64  `json:"accepted"`
	Throttled      uint64  `json:"throttled"`
	Receipts       uint64  `json:"receipts"`
}

// SimPatch changes some settings of a simulated network (nil: unchanged).
type SimPatch struct {
	LatencyMS      *float64 `json:"latency_ms"`
	TPS            *float64 `json:"tps"`
	FailureRate    *float64 `json:"failure_rate"`
	RejectRate     *float64 `json:"reject_rate"`
	ThrottleRate   *float64 `json:"throttle_rate"`
	LostAnswerRate *float64 `json:"lost_answer_rate"`
	ReceiptDelayMS *float64 `json:"receipt_delay_ms"`
	Down           *bool    `json:"down"`
}

// Simulators are the node's simulated networks.
type Simulators interface {
	Networks() []SimNetwork
	Configure(n carriers.Network, p SimPatch) (SimNetwork, error)
}

// Handler serves the endpoints.
type Handler struct {
	sims Simulators
}

// New returns the endpoints; sims is nil when the node does not run on simulated networks.
func New(sims Simulators) *Handler { return &Handler{sims: sims} }

// Register adds the routes.
func (h *Handler) Register(r *api.Router) {
	r.Handle("GET", "/admin/sim", api.Operator, h.simNetworks)
	r.Handle("PATCH", "/admin/sim/{network}", api.Operator, h.configureSim)
}

func (h *Handler) simNetworks(_ context.Context, rc *fasthttp.RequestCtx) error {
	if h.sims == nil {
		return api.NotFound("the node does not run on simulated networks")
	}
	return api.WriteJSON(rc, http.StatusOK, h.sims.Networks())
}

func (h *Handler) configureSim(_ context.Context, rc *fasthttp.RequestCtx) error {
	if h.sims == nil {
		return api.NotFound("the node does not run on simulated networks")
	}
	name, _ := rc.UserValue("network").(string)
	n, ok := carriers.ParseNetwork(name)
	if !ok {
		return api.NotFound("no such network")
	}
	var p SimPatch
	if err := api.DecodeJSON(rc, &p); err != nil {
		return err
	}
	var fe api.FieldErrors
	for field, v := range map[string]*float64{"failure_rate": p.FailureRate, "reject_rate": p.RejectRate,
		"throttle_rate": p.ThrottleRate, "lost_answer_rate": p.LostAnswerRate} {
		if v != nil && (*v < 0 || *v > 1) {
			fe.Add(field, "must be a probability from 0 to 1")
		}
	}
	for field, v := range map[string]*float64{"latency_ms": p.LatencyMS, "tps": p.TPS, "receipt_delay_ms": p.ReceiptDelayMS} {
		if v != nil && (*v < 0 || *v > 7*24*3600*1000) {
			fe.Add(field, "must be a non-negative number")
		}
	}
	if err := fe.Err(); err != nil {
		return err
	}
	out, err := h.sims.Configure(n, p)
	if err != nil {
		return api.Invalid(api.FieldError{Field: "body", Message: err.Error()})
	}
	return api.WriteJSON(rc, http.StatusOK, out)
}
