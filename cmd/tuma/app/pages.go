// The dashboard: the web app under /app/ and the one list of its page groups.

package app

import (
	"net"
	"net/url"
	"strings"

	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/api/accounts"
	"github.com/tuma-sms/tuma/transport/api/campaigns"
	"github.com/tuma-sms/tuma/transport/api/contacts"
	"github.com/tuma-sms/tuma/transport/api/inbound"
	"github.com/tuma-sms/tuma/transport/api/senders"
	apismpp "github.com/tuma-sms/tuma/transport/api/smpp"
	"github.com/tuma-sms/tuma/transport/api/sms"
	"github.com/tuma-sms/tuma/transport/api/suppressions"
	"github.com/tuma-sms/tuma/transport/api/wallet"
	apiwebhooks "github.com/tuma-sms/tuma/transport/api/webhooks"
	"github.com/tuma-sms/tuma/transport/web"
	campaignpages "github.com/tuma-sms/tuma/transport/web/campaigns"
	contactpages "github.com/tuma-sms/tuma/transport/web/contacts"
	"github.com/tuma-sms/tuma/transport/web/developers"
	inboundpages "github.com/tuma-sms/tuma/transport/web/inbound"
	"github.com/tuma-sms/tuma/transport/web/messages"
	"github.com/tuma-sms/tuma/transport/web/notifications"
	"github.com/tuma-sms/tuma/transport/web/overview"
	"github.com/tuma-sms/tuma/transport/web/reports"
	"github.com/tuma-sms/tuma/transport/web/send"
	sendersweb "github.com/tuma-sms/tuma/transport/web/senders"
	"github.com/tuma-sms/tuma/transport/web/settings"
	smpppages "github.com/tuma-sms/tuma/transport/web/smpp"
	suppressionpages "github.com/tuma-sms/tuma/transport/web/suppressions"
	walletweb "github.com/tuma-sms/tuma/transport/web/wallet"
	webhookpages "github.com/tuma-sms/tuma/transport/web/webhooks"
)

// dashboard builds the web app: the plumbing (sessions, CSRF, layout, assets) and every page
// group, with the account operations the JSON API runs too.
func (a *App) dashboard(authn web.Authenticator, acct web.Accounts, verify web.Verification, ops pageOps) (api.Group, error) {
	site, err := web.New(web.Options{
		Secure:  strings.HasPrefix(a.cfg.PublicURL, "https://"),
		MaxAge:  a.cfg.SessionMaxAge,
		Proxies: api.Proxies(a.cfg.TrustedProxies),
	}, web.Deps{Log: a.log, Store: a.store, Auth: authn, Now: a.now})
	if err != nil {
		return nil, err
	}
	groups, err := a.pageGroups(site, acct, verify, ops)
	if err != nil {
		return nil, err
	}
	return site.Mount(groups...), nil
}

// pageOps are the JSON API's groups whose operations pages run too.
type pageOps struct {
	senders   *senders.Handler
	wallet    *wallet.Handler
	contacts  *contacts.Handler
	campaigns *campaigns.Handler
	sms       *sms.Handler
	webhooks  *apiwebhooks.Handler
	accounts  *accounts.Handler
	suppress  *suppressions.Handler
	inbox     *inbound.Handler
	smpp      *apismpp.Handler
}

// pageGroups is the list of the dashboard's pages, in the navigation's order: a new page
// group is one line here. site.Coming stands in for a page not built yet.
func (a *App) pageGroups(site *web.Site, acct web.Accounts, verify web.Verification, ops pageOps) ([]web.Group, error) {
	home, err := overview.New(site, a.store, a.now)
	if err != nil {
		return nil, err
	}
	inbox, err := notifications.New(site, a.store)
	if err != nil {
		return nil, err
	}
	senderIDs, err := sendersweb.New(site, ops.senders, a.store)
	if err != nil {
		return nil, err
	}
	money, err := walletweb.New(site, ops.wallet, a.store)
	if err != nil {
		return nil, err
	}
	addressBook, err := contactpages.New(site, ops.contacts, a.store)
	if err != nil {
		return nil, err
	}
	doNotText, err := suppressionpages.New(site, ops.suppress)
	if err != nil {
		return nil, err
	}
	sendForm, err := send.New(site, ops.sms, a.store, ops.senders.SharedSender(), a.now)
	if err != nil {
		return nil, err
	}
	sent, err := messages.New(site, ops.sms)
	if err != nil {
		return nil, err
	}
	received, err := inboundpages.New(site, ops.inbox)
	if err != nil {
		return nil, err
	}
	drives, err := campaignpages.New(site, ops.campaigns, a.store, a.cfg.SharedSenderID, a.now)
	if err != nil {
		return nil, err
	}
	results, err := reports.New(site, a.store, a.now)
	if err != nil {
		return nil, err
	}
	hooks, err := webhookpages.New(site, ops.webhooks)
	if err != nil {
		return nil, err
	}
	binds, err := smpppages.New(site, ops.smpp, smpppages.Options{Server: a.smppPublicAddr()})
	if err != nil {
		return nil, err
	}
	keys, err := developers.New(site, ops.accounts, a.store, developers.Options{BaseURL: a.cfg.PublicURL})
	if err != nil {
		return nil, err
	}
	profile, err := settings.New(site, ops.accounts, a.store)
	if err != nil {
		return nil, err
	}
	return []web.Group{
		web.NewAuthPages(site, acct, verify),
		home,
		sendForm,
		sent,
		received, // under /app/messages: its nav entry is Messages
		drives,
		results,
		addressBook,
		doNotText, // under /app/contacts: its nav entry is Contacts
		senderIDs,
		money,
		keys,
		hooks, // under /app/developers: its nav entry is Developers
		binds, // under /app/developers too
		inbox,
		profile,
	}, nil
}

// smppPublicAddr is where tenants' ESMEs reach the SMPP server: the public URL's host and the
// server's port ("" when the node serves no SMPP).
func (a *App) smppPublicAddr() string {
	addr := a.SMPPServerAddr()
	if addr == "" {
		return ""
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	u, err := url.Parse(a.cfg.PublicURL)
	if err != nil || u.Hostname() == "" {
		return addr
	}
	return net.JoinHostPort(u.Hostname(), port)
}
