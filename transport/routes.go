package transport

import (
	"github.com/tuma-sms/tuma/persistence"
)

// registerRoutes lists every endpoint. The OpenAPI document must describe exactly these
// (TestOpenAPIMatchesRoutes).
func (s *Server) registerRoutes() {
	// Accounts.
	s.handle("POST", "/auth/register", public, s.register)
	s.handle("POST", "/auth/login", public, s.login)
	s.handle("POST", "/auth/refresh", public, s.refresh)
	s.handle("GET", "/auth/me", authed, s.me)
	s.handle("PATCH", "/auth/profile", authed, s.updateProfile)
	s.handle("PATCH", "/auth/change-password", authed, s.changePassword)
	s.handle("POST", "/auth/rotate-api-key", authed, s.rotateAPIKey)

	// Operators.
	s.handle("POST", "/admin/accounts/{id}/suspend", admin, s.setAccountStatus(persistence.StatusSuspended))
	s.handle("POST", "/admin/accounts/{id}/reactivate", admin, s.setAccountStatus(persistence.StatusActive))

	// Operations.
	s.handle("GET", "/healthz", public, s.healthz)
	s.handle("GET", "/readyz", public, s.readyz)
	s.handle("GET", "/metrics", public, s.metricsHandler())
	s.handle("GET", "/openapi.json", public, s.openAPI)
	s.handle("GET", "/docs", public, s.docs)
	s.handle("GET", "/docs/{filepath:*}", public, s.docsAssets())
}
