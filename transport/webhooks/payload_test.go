package webhooks

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// appendString writes what encoding/json writes, byte for byte.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `q"b\s`, "tab\tnl\ncr\r", "\x00\x1f\x7f", "<a&b>", "ñandú 🚀",
		"bad \xff utf8 \xe2\x82", "\u2028\u2029", "Ref: 2026/11"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString(nil, s); string(got) != string(want) {
			t.Fatalf("appendString(%q) = %s; encoding/json gives %s", s, got, want)
		}
	})
}

// A body is JSON with every field of CONTRACT §14, as the message was when the event left it.
func TestBodyRendersEveryField(t *testing.T) {
	msg, job, camp := uuid.New(), uuid.New(), uuid.New()
	sent := time.Date(2026, 11, 26, 1, 2, 3, 450_000_000, time.FixedZone("EAT", 3*3600))
	pid, ref := "SIM-1", `order "7" <b>`
	created := time.Date(2026, 11, 26, 1, 2, 4, 0, time.UTC)
	d := persistence.WebhookDelivery{Events: []persistence.WebhookEvent{
		{Seq: 1 << 16, Type: persistence.EventMessageSent, CreatedAt: created, MessageID: msg},
		{Seq: 1<<16 | 1, Type: persistence.EventMessageDelivered, CreatedAt: created, MessageID: msg},
		{Seq: 2 << 16, Type: persistence.EventTest, CreatedAt: created, Data: json.RawMessage(`{"a": 1}`)},
		{Seq: 3 << 16, Type: persistence.EventMessageFailed, CreatedAt: created, MessageID: uuid.New()},
	}}
	m := persistence.MessageEventData{ID: msg, JobID: job, CampaignID: camp, Reference: &ref,
		Recipient: "+254712345678", Network: carriers.Safaricom, Sender: "TUMA", Status: persistence.MessageDelivered,
		ProviderStatus: "DELIVRD", ProviderMessageID: &pid, Parts: 2, CostCents: 105, SentAt: sent, DeliveredAt: sent}
	msgs := []persistence.MessageEventData{m, m, {}, {}} // the last one's message is gone
	b, err := Body(d, msgs)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Events []map[string]json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal(b, &raw); err != nil || len(raw.Events) != 4 {
		t.Fatalf("%v: %s", err, b)
	}
	var evs []map[string]any
	for _, e := range raw.Events {
		var data map[string]any
		if err := json.Unmarshal(e["data"], &data); err != nil {
			t.Fatal(err)
		}
		var id, typ, at string
		_ = json.Unmarshal(e["id"], &id)
		_ = json.Unmarshal(e["type"], &typ)
		_ = json.Unmarshal(e["created_at"], &at)
		evs = append(evs, map[string]any{"id": id, "type": typ, "created_at": at, "data": data})
	}
	if evs[0]["id"] != "evt_0000000000010000" || evs[1]["id"] != "evt_0000000000010001" || evs[0]["created_at"] != "2026-11-26T01:02:04Z" {
		t.Errorf("ids and times: %v", evs)
	}
	sentData := evs[0]["data"].(map[string]any)
	want := map[string]any{"message_id": msg.String(), "job_id": job.String(), "campaign_id": camp.String(), "reference": ref,
		"recipient": "+254712345678", "network": "safaricom", "sender_id": "TUMA", "status": "sent", "provider_status": "ENROUTE",
		"provider_message_id": "SIM-1", "parts": 2.0, "cost_kes": 1.05, "sent_at": "2026-11-25T22:02:03.45Z", "delivered_at": nil}
	for k, v := range want {
		if sentData[k] != v {
			t.Errorf("message.sent %s = %v; want %v", k, sentData[k], v)
		}
	}
	if len(sentData) != len(want) {
		t.Errorf("message.sent has %d fields; want %d: %v", len(sentData), len(want), sentData)
	}
	del := evs[1]["data"].(map[string]any)
	if del["status"] != "delivered" || del["provider_status"] != "DELIVRD" || del["delivered_at"] != "2026-11-25T22:02:03.45Z" {
		t.Errorf("message.delivered = %v", del)
	}
	if evs[2]["data"].(map[string]any)["a"] != 1.0 {
		t.Errorf("webhook.test data = %v", evs[2]["data"])
	}
	gone := evs[3]["data"].(map[string]any)
	if gone["status"] != "sent" || gone["job_id"] != nil || len(gone) != 10 {
		t.Errorf("an event whose message is gone = %v", gone)
	}
	if _, err := Body(persistence.WebhookDelivery{Events: []persistence.WebhookEvent{
		{Seq: 4 << 16, Type: persistence.EventTest, Data: json.RawMessage(`{"a":`)}}}, nil); err == nil {
		t.Error("data that is not JSON was sent")
	}
}

// Times are spelt as time.RFC3339Nano spells them in UTC, whatever their zone and fraction.
func TestAppendStampIsRFC3339Nano(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	zones := []*time.Location{time.UTC, time.FixedZone("EAT", 3*3600), time.FixedZone("X", -7*3600-1800)}
	for i := 0; i < 200_000; i++ {
		var at time.Time
		switch i % 4 {
		case 0:
			at = time.Unix(rng.Int64N(253402300799), 0) // whole seconds up to 9999
		case 1:
			at = time.Unix(rng.Int64N(4102444800), rng.Int64N(1e9))
		case 2:
			at = time.Unix(rng.Int64N(4102444800), rng.Int64N(1e6)*1000) // microseconds, as PostgreSQL keeps them
		default:
			at = time.Unix(rng.Int64N(4102444800), rng.Int64N(10)*1e8)
		}
		at = at.In(zones[i%len(zones)])
		want := `"` + at.UTC().Format(time.RFC3339Nano) + `"`
		if got := string(appendStamp(nil, at)); got != want {
			t.Fatalf("%v: %s, want %s", at, got, want)
		}
	}
	for _, at := range []time.Time{time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 5, time.UTC), {}} {
		if got, want := string(appendStamp(nil, at)), `"`+at.UTC().Format(time.RFC3339Nano)+`"`; got != want {
			t.Errorf("%v: %s, want %s", at, got, want)
		}
	}
}
