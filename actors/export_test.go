package actors

import "github.com/tuma-sms/tuma/carriers"

// PanicLink makes a network's link actor panic, to exercise its supervision (tests only).
func PanicLink(e *Engine, n carriers.Network) { e.root.Send(e.links[n], &panicNow{}) }

// PanicReceipts makes the first receipts shard panic (tests only).
func PanicReceipts(e *Engine) { e.root.Send(e.receipts[0], &panicNow{}) }
