package api

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
	s.handle("GET", "/auth/verify-email", public, s.verifyEmail)
	s.handle("POST", "/auth/send-verification-code", authed, s.sendVerificationCode)
	s.handle("POST", "/auth/verify-code", authed, s.verifyCode)
	s.handle("POST", "/auth/resend-verification", public, s.resendVerification)
	s.handle("GET", "/auth/pending-email", authed, s.pendingEmail)
	s.handle("PATCH", "/auth/pending-email", authed, s.changePendingEmail)
	s.handle("POST", "/auth/forgot-password", public, s.forgotPassword)
	s.handle("POST", "/auth/reset-password", public, s.resetPassword)

	// SMS.
	s.handle("POST", "/sms/send", authed, s.send)
	s.handle("GET", "/sms/messages", authed, s.listMessages)
	s.handle("GET", "/sms/messages/{id}", authed, s.getMessage)
	s.handle("GET", "/sms/delivery/{provider_message_id}", authed, s.deliveryBudget(s.delivery))
	s.handle("GET", "/sms/stats", authed, s.stats)

	// Sender IDs.
	s.handle("GET", "/senders", authed, s.listSenders)
	s.handle("POST", "/senders", authed, s.createSender)
	s.handleUpload("POST", "/senders/{id}/documents", authed, maxDocumentsBody, s.submitDocuments(false))
	s.handle("POST", "/senders/{id}/pay", authed, s.paySenderFee)
	s.handleUpload("POST", "/senders/{id}/re-apply", authed, maxDocumentsBody, s.submitDocuments(true))
	s.handle("PATCH", "/senders/{id}/set-default", authed, s.setDefaultSender)
	s.handle("DELETE", "/senders/{id}", authed, s.cancelSender)
	// Public, and filled in with the company's name for a signed-in caller.
	s.handle("GET", "/senders/templates/{kind}/download", public, s.letter)

	// Contacts and groups.
	s.handle("GET", "/contacts", authed, s.listContacts)
	s.handle("POST", "/contacts", authed, s.createContact)
	s.handle("DELETE", "/contacts/{id}", authed, s.deleteContact)
	s.handle("GET", "/contacts/template", authed, s.contactsTemplate)
	s.handleUpload("POST", "/contacts/import", authed, maxImportBody, s.importContacts)
	s.handle("GET", "/contacts/export", authed, s.exportContacts)
	s.handle("GET", "/contacts/groups", authed, s.listGroups)
	s.handle("POST", "/contacts/groups", authed, s.createGroup)
	s.handle("DELETE", "/contacts/groups/{id}", authed, s.deleteGroup)
	s.handle("GET", "/campaigns", authed, s.listCampaigns)
	s.handle("POST", "/campaigns", authed, s.createCampaign)
	s.handle("GET", "/campaigns/{id}", authed, s.getCampaign)
	s.handle("GET", "/campaigns/{id}/report", authed, s.campaignReport)
	s.handle("POST", "/campaigns/{id}/cancel", authed, s.cancelCampaign)
	s.handle("GET", "/reports/spend-trend", authed, s.spendTrend)
	s.handle("GET", "/reports/campaign-performance", authed, s.campaignPerformance)
	s.handle("GET", "/reports/group-performance", authed, s.groupPerformance)

	// Wallet and pricing.
	s.handle("GET", "/wallet", authed, s.wallet)
	s.handle("GET", "/wallet/transactions", authed, s.transactions)
	s.handle("GET", "/wallet/pricing", authed, s.pricing)
	s.handle("POST", "/wallet/topup", authed, s.topup)
	s.handle("GET", "/wallet/callback", public, s.walletCallback)
	s.handle("POST", "/payments/webhook", public, s.paymentWebhook)
	s.handle("GET", "/pricing/my", authed, s.pricing)

	// Notifications.
	s.handle("GET", "/notifications", authed, s.notifications)
	s.handle("GET", "/notifications/unread-count", authed, s.unreadCount)
	s.handle("PATCH", "/notifications/read-all", authed, s.markAllRead)
	s.handle("PATCH", "/notifications/{id}/read", authed, s.markRead)

	// The sandbox payment provider (development; 404 unless TUMA_PAYMENT_PROVIDER=sandbox).
	s.handle("GET", "/checkout/{access_code}", public, s.checkoutPage)
	s.handle("POST", "/checkout/{access_code}", public, s.checkoutAction)
	s.handle("POST", "/sandbox/paystack/transaction/initialize", public, s.sandboxAPI(s.sandboxInitialize))
	s.handle("GET", "/sandbox/paystack/transaction/verify/{reference}", public, s.sandboxAPI(s.sandboxVerify))

	// Operators.
	s.handle("POST", "/admin/accounts/{id}/suspend", admin, s.setAccountStatus(persistence.StatusSuspended))
	s.handle("POST", "/admin/accounts/{id}/reactivate", admin, s.setAccountStatus(persistence.StatusActive))
	s.handle("POST", "/admin/accounts/{id}/credit", admin, s.credit)
	s.handle("PUT", "/admin/accounts/{id}/pricing", admin, s.setPricing)
	s.handle("GET", "/admin/senders", admin, s.reviewSenders)
	s.handle("POST", "/admin/senders/{id}/approve", admin, s.approveSender)
	s.handle("POST", "/admin/senders/{id}/reject", admin, s.rejectSender)
	s.handle("POST", "/admin/notifications/promo", admin, s.promo)
	s.handle("GET", "/admin/sim", admin, s.simNetworks)
	s.handle("PATCH", "/admin/sim/{network}", admin, s.configureSim)

	// Operations.
	s.handle("GET", "/healthz", public, s.healthz)
	s.handle("GET", "/readyz", public, s.readyz)
	s.handle("GET", "/metrics", public, s.publicMetrics())
	s.handle("GET", "/openapi.json", public, openAPI)
	s.handle("GET", "/docs", public, docs)
	s.handle("GET", "/docs/{filepath:*}", public, docsAssets)
	// Profiles, to operators (TUMA_PPROF; 404 unless on). Public access: the handler checks
	// the option before the token, so the route reveals nothing while it is off.
	s.handle("GET", "/debug/pprof/{path:*}", public, s.pprof())
}
