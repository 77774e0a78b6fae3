// Reads {"secret", "id", "timestamp", "signature", "body"} objects, one JSON line each, from
// stdin and prints, per line, {"ok":true} or {"ok":false,"error":"…"}: whether the
// standardwebhooks package accepts the delivery with that secret.
const { Webhook } = require("standardwebhooks");
const readline = require("readline");

const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const c = JSON.parse(line);
  try {
    new Webhook(c.secret).verify(c.body, {
      "webhook-id": c.id,
      "webhook-timestamp": c.timestamp,
      "webhook-signature": c.signature,
    });
    console.log(JSON.stringify({ ok: true }));
  } catch (e) {
    console.log(JSON.stringify({ ok: false, error: String(e && e.message ? e.message : e) }));
  }
});
