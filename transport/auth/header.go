package auth

import "strings"

// maxCredentialLen bounds what we hash or parse from a header.
const maxCredentialLen = 4096

// ParseBearer extracts the token from an Authorization header value ("Bearer <token>", scheme
// case-insensitive). ok is false when the value is not a bearer credential.
func ParseBearer(header string) (token string, ok bool) {
	if len(header) > maxCredentialLen {
		return "", false
	}
	scheme, rest, found := strings.Cut(header, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimLeft(rest, " ")
	if token == "" || strings.ContainsAny(token, " \t\r\n") {
		return "", false
	}
	return token, true
}

// ValidAPIKeyShape reports whether key looks like one of our keys, so garbage never reaches
// the cache or the database.
func ValidAPIKeyShape(key string) bool {
	if len(key) != len(APIKeyPrefix)+apiKeyRandomLen || !strings.HasPrefix(key, APIKeyPrefix) {
		return false
	}
	for i := len(APIKeyPrefix); i < len(key); i++ {
		c := key[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}
