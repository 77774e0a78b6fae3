package redis

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/rueidis"
)

// ErrUnavailable: Redis did not answer; the caller paces on its own.
var ErrUnavailable = errors.New("redis is unavailable")

// spacedSlots is GCRA in Redis: one schedule per key, every node taking slots from it. Slots
// are spaced ARGV[1] µs apart and none is handed out more than ARGV[3] µs ahead of Redis's
// clock, so every node together keeps to the rate in every window, and no node hoards what the
// others could use. It grants up to ARGV[2] slots and returns {granted, first}: first is how
// many µs from now the first granted slot is or, when none was, when to ask again.
const spacedSlots = `
local every = tonumber(ARGV[1])
local want = tonumber(ARGV[2])
local horizon = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]))
if tat == nil or tat < now then tat = now end
local room = math.floor((now + horizon - tat) / every)
if room < 1 then
  return {0, tat - horizon - now + every}
end
local n = math.min(want, room)
redis.call('SET', KEYS[1], tostring(tat + n * every), 'PX', math.ceil((horizon + n * every) / 1000) + 1000)
return {n, tat - now}
`

// Schedule hands out submit slots shared by every node (a network's TPS across a cluster).
type Schedule struct {
	c      *Client
	script *rueidis.Lua
}

// NewSchedule returns schedules on c.
func NewSchedule(c *Client) *Schedule {
	return &Schedule{c: c, script: rueidis.NewLuaScript(spacedSlots)}
}

// Reserve takes up to want slots of the schedule named key, spaced every apart, none further
// than horizon ahead. It returns how many it got and how long from now the first of them is
// (the others follow every apart); with none, first is when to ask again. ErrUnavailable when
// Redis did not answer.
func (s *Schedule) Reserve(ctx context.Context, key string, every time.Duration, want int, horizon time.Duration) (int, time.Duration, error) {
	if every <= 0 || want <= 0 {
		return 0, 0, errors.New("schedule: every and want must be positive")
	}
	rc, cctx, cancel, up := s.c.do(ctx)
	if !up {
		return 0, 0, ErrUnavailable
	}
	res, err := s.script.Exec(cctx, rc, []string{s.c.Key("slots", key)}, []string{
		strconv.FormatInt(max(every.Microseconds(), 1), 10), strconv.Itoa(want), strconv.FormatInt(horizon.Microseconds(), 10),
	}).AsIntSlice()
	cancel()
	if err != nil || len(res) != 2 {
		s.c.failed(err)
		return 0, 0, errors.Join(ErrUnavailable, err)
	}
	return int(res[0]), time.Duration(res[1]) * time.Microsecond, nil
}
