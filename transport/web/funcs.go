package web

import (
	"html/template"
	"strconv"
	"strings"
	"time"
)

// funcs are the template functions every page has.
func funcs(a *assets) template.FuncMap {
	return template.FuncMap{
		"asset": a.URL,
		"field": newField,
		"kes":   KES,
		"num":   Thousands,
		"pct":   Percent,
		"date":  Date,
		"when":  DateTime,
		"navOf": navOf,
	}
}

// navView is what the "nav" partial draws: the entries, the current one, the landmark's name.
type navView struct {
	Label   string
	Items   []NavItem
	Current string
}

func navOf(p *Page, label string) navView {
	return navView{Label: label, Items: p.NavItems, Current: p.Nav}
}

// KES formats cents as "KES 1,234.50".
func KES(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return sign + "KES " + Thousands(cents/100) + "." + strconv.FormatInt(cents%100/10, 10) + strconv.FormatInt(cents%10, 10)
}

// KESEach is cents shared over n (n > 0), to the nearest cent, as KES: what each of n things
// cost (the API's cost_per_delivered rounds the same way).
func KESEach(cents, n int64) string { return KES((2*cents + n) / (2 * n)) }

// Thousands formats n with thousands separators: 1234567 → "1,234,567".
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Percent formats a percentage with one decimal: 97.25 → "97.3%".
func Percent(p float64) string { return strconv.FormatFloat(p, 'f', 1, 64) + "%" }

// Date formats a day as "2 Jan 2006" (UTC).
func Date(t time.Time) string { return t.UTC().Format("2 Jan 2006") }

// DateTime formats a time as "2 Jan 2006, 15:04 UTC".
func DateTime(t time.Time) string { return t.UTC().Format("2 Jan 2006, 15:04 UTC") }
