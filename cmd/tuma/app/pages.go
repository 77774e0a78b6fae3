// The dashboard: the web app under /app/ and the one list of its page groups.

package app

import (
	"strings"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/api/contacts"
	"github.com/tuma-sms/tuma/transport/web"
	contactpages "github.com/tuma-sms/tuma/transport/web/contacts"
	"github.com/tuma-sms/tuma/transport/web/notifications"
	"github.com/tuma-sms/tuma/transport/web/overview"
)

// dashboard builds the web app: the plumbing (sessions, CSRF, layout, assets) and every page
// group, with the account operations the JSON API runs too.
func (a *App) dashboard(authn web.Authenticator, acct web.Accounts, verify web.Verification) (api.Group, error) {
	site, err := web.New(web.Options{
		Secure:  strings.HasPrefix(a.cfg.PublicURL, "https://"),
		MaxAge:  a.cfg.SessionMaxAge,
		Proxies: api.Proxies(a.cfg.TrustedProxies),
	}, web.Deps{Log: a.log, Store: a.store, Auth: authn, Now: a.now})
	if err != nil {
		return nil, err
	}
	groups, err := a.pageGroups(site, acct, verify)
	if err != nil {
		return nil, err
	}
	return site.Mount(groups...), nil
}

// pageGroups is the list of the dashboard's pages, in the navigation's order: a new page
// group is one line here. site.Coming stands in for a page not built yet.
func (a *App) pageGroups(site *web.Site, acct web.Accounts, verify web.Verification) ([]web.Group, error) {
	home, err := overview.New(site, a.store, a.now)
	if err != nil {
		return nil, err
	}
	inbox, err := notifications.New(site, a.store)
	if err != nil {
		return nil, err
	}
	addressBook, err := contactpages.New(site, contacts.New(contacts.Options{RequestTimeout: a.cfg.RequestTimeout, ImportWorkers: a.cfg.ImportWorkers},
		contacts.Deps{Log: a.log, Store: a.store, Lists: api.NewLists(derive(a.cfg.JWTSecret, "list cursors")), Plan: carriers.DefaultPlan()}), a.store)
	if err != nil {
		return nil, err
	}
	return []web.Group{
		web.NewAuthPages(site, acct, verify),
		home,
		site.Coming("/app/send", "Send"),
		site.Coming("/app/messages", "Messages"),
		site.Coming("/app/campaigns", "Campaigns"),
		addressBook,
		site.Coming("/app/senders", "Sender IDs"),
		site.Coming("/app/wallet", "Wallet"),
		site.Coming("/app/developers", "Developers"),
		inbox,
	}, nil
}
