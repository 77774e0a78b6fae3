// Standard Webhooks signatures.

package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/tuma-sms/tuma/persistence"
)

// Sign returns the webhook-signature header of a delivery: "v1,<base64 HMAC-SHA256>" over
// "<id>.<timestamp>.<body>" with each secret's key, space-separated (during a secret roll the
// new secret's first, then the old one's).
func Sign(secrets []string, id string, timestamp int64, body []byte) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := secretKey(s)
		if err != nil {
			return "", err
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id))
		m.Write([]byte{'.'})
		m.Write(strconv.AppendInt(nil, timestamp, 10))
		m.Write([]byte{'.'})
		m.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	return strings.Join(sigs, " "), nil
}

// secretKey is the key of a whsec_ secret: the base64-decoded part after the prefix.
func secretKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, persistence.SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("webhook secret lacks the %s prefix", persistence.SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("webhook secret: %w", err)
	}
	return key, nil
}
