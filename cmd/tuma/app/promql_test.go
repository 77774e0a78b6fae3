package app_test

// PromQL: the metric selectors of the rules' and the dashboard's expressions (see deploy_test.go).

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

type promMatcher struct{ label, op, value string }

type promSelector struct {
	name     string
	matchers []promMatcher
}

// promqlKeywords are identifiers that are not metric names: aggregation operators (which may
// be followed by by/without before their parenthesis), set and comparison keywords, modifiers.
var promqlKeywords = map[string]bool{
	"sum": true, "avg": true, "count": true, "min": true, "max": true, "group": true, "stddev": true,
	"stdvar": true, "topk": true, "bottomk": true, "quantile": true, "count_values": true, "limitk": true,
	"limit_ratio": true, "by": true, "without": true, "on": true, "ignoring": true, "group_left": true,
	"group_right": true, "offset": true, "bool": true, "and": true, "or": true, "unless": true,
	"atan2": true, "inf": true, "nan": true,
}

// promqlLabelLists are keywords followed by a parenthesised list of label names.
var promqlLabelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

var promqlFunctions = wordSet(`abs absent absent_over_time acos acosh asin asinh atan atanh avg_over_time ceil
	changes clamp clamp_max clamp_min cos cosh count_over_time day_of_month day_of_week day_of_year days_in_month
	deg delta deriv double_exponential_smoothing exp floor histogram_avg histogram_count histogram_fraction
	histogram_quantile histogram_stddev histogram_stdvar histogram_sum holt_winters hour idelta increase info irate
	label_join label_replace last_over_time ln log10 log2 mad_over_time max_over_time min_over_time minute month pi
	predict_linear present_over_time quantile_over_time rad rate resets round scalar sgn sin sinh sort sort_by_label
	sort_by_label_desc sort_desc sqrt stddev_over_time stdvar_over_time sum_over_time tan tanh time timestamp vector year`)

func wordSet(words string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.Fields(words) {
		out[w] = true
	}
	return out
}

// promqlSelectors returns the metric selectors of a PromQL expression (Grafana's $variables
// allowed). It is a scanner, not a parser: strings, ranges and label lists are skipped, an
// identifier followed by ( must be a known function, and any other identifier that is not a
// keyword is a metric name.
func promqlSelectors(expr string) ([]promSelector, error) {
	var out []promSelector
	s := expr
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
	skipSpace := func(i int) int {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
		return i
	}
	// skipString returns the index after the string literal starting at i.
	skipString := func(i int) (int, error) {
		q := s[i]
		for j := i + 1; j < len(s); j++ {
			if s[j] == '\\' && q != '`' {
				j++
				continue
			}
			if s[j] == q {
				return j + 1, nil
			}
		}
		return 0, fmt.Errorf("unterminated string in %q", expr)
	}
	// closing returns the index after the bracket closing the one at i, strings skipped.
	closing := func(i int, open, close byte) (int, error) {
		depth := 0
		for j := i; j < len(s); {
			switch c := s[j]; {
			case c == '"' || c == '\'' || c == '`':
				k, err := skipString(j)
				if err != nil {
					return 0, err
				}
				j = k
				continue
			case c == open:
				depth++
			case c == close:
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
			j++
		}
		return 0, fmt.Errorf("unbalanced %c in %q", open, expr)
	}
	matcherRe := regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`" + `)\s*(,|$)`)
	parseMatchers := func(body string) ([]promMatcher, error) {
		var ms []promMatcher
		for strings.TrimSpace(body) != "" {
			m := matcherRe.FindStringSubmatch(body)
			if m == nil {
				return nil, fmt.Errorf("bad label matchers {%s} in %q", body, expr)
			}
			v := m[3][1 : len(m[3])-1]
			if m[3][0] != '`' {
				v = strings.NewReplacer(`\\`, `\`, `\"`, `"`, `\'`, `'`).Replace(v)
			}
			ms = append(ms, promMatcher{m[1], m[2], v})
			body = body[len(m[0]):]
		}
		return ms, nil
	}

	depth := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '(':
			depth++
			i++
		case c == ')':
			if depth--; depth < 0 {
				return nil, fmt.Errorf("unbalanced ) in %q", expr)
			}
			i++
		case c == '"' || c == '\'' || c == '`':
			j, err := skipString(i)
			if err != nil {
				return nil, err
			}
			i = j
		case c == '{':
			return nil, fmt.Errorf("selector without a metric name in %q", expr)
		case c == '[':
			j, err := closing(i, '[', ']')
			if err != nil {
				return nil, err
			}
			i = j
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '$': // a Grafana variable: $name or ${name}
			i++
			if i < len(s) && s[i] == '{' {
				j, err := closing(i, '{', '}')
				if err != nil {
					return nil, err
				}
				i = j
			}
			for i < len(s) && isIdent(s[i]) {
				i++
			}
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			for i < len(s) && (isIdent(s[i]) || s[i] == '.') { // numbers, durations, 1e3, 0x1f
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			word := s[i:j]
			next := skipSpace(j)
			switch {
			case promqlKeywords[word]:
				i = j
				if promqlLabelLists[word] && next < len(s) && s[next] == '(' {
					k, err := closing(next, '(', ')')
					if err != nil {
						return nil, err
					}
					i = k
				}
			case next < len(s) && s[next] == '(':
				if !promqlFunctions[word] {
					return nil, fmt.Errorf("unknown function %s in %q", word, expr)
				}
				i = j
			default:
				sel := promSelector{name: word}
				i = j
				if next < len(s) && s[next] == '{' {
					k, err := closing(next, '{', '}')
					if err != nil {
						return nil, err
					}
					ms, err := parseMatchers(s[next+1 : k-1])
					if err != nil {
						return nil, err
					}
					sel.matchers = ms
					i = k
				}
				out = append(out, sel)
			}
		default:
			i++
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced ( in %q", expr)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no metric in %q", expr)
	}
	return out, nil
}

func TestDeployPromQLScanner(t *testing.T) {
	names := func(sels []promSelector) []string {
		var out []string
		for _, s := range sels {
			out = append(out, s.name)
		}
		return out
	}
	for _, tt := range []struct {
		expr string
		want []string
	}{
		{`up{job="tuma"} == 0`, []string{"up"}},
		{`sum by (network, le) (rate(a_bucket{route="/x{y}",le="0.06"}[5m])) / on (network) group_left (x) sum(b) > bool 0.5`, []string{"a_bucket", "b"}},
		{`increase(c_total[10m]) > 0 or (c_total > 0 unless c_total offset 10m)`, []string{"c_total", "c_total", "c_total"}},
		{`histogram_quantile(0.99, sum by (le) (rate(d_bucket{instance=~"$instance"}[$__rate_interval]))) * 1e3`, []string{"d_bucket"}},
		{`tuma:ratio_rate5m > (14.4 * 0.01)`, []string{"tuma:ratio_rate5m"}},
		{`max without (kind) (e) - e offset 1h30m`, []string{"e", "e"}},
	} {
		sels, err := promqlSelectors(tt.expr)
		if err != nil || !slices.Equal(names(sels), tt.want) {
			t.Errorf("promqlSelectors(%q) = %v, %v; want %v", tt.expr, names(sels), err, tt.want)
		}
	}
	sels, _ := promqlSelectors(`a{b="c",d=~"e|f", g != 'h'}`)
	if want := []promMatcher{{"b", "=", "c"}, {"d", "=~", "e|f"}, {"g", "!=", "h"}}; len(sels) != 1 || !slices.Equal(sels[0].matchers, want) {
		t.Errorf("matchers = %+v; want %+v", sels, want)
	}
	for _, bad := range []string{`rat(x[5m])`, `x{a="b"`, `sum(x`, `{a="b"}`, `x{a}`} {
		if _, err := promqlSelectors(bad); err == nil {
			t.Errorf("promqlSelectors(%q) accepted", bad)
		}
	}
}

// ---------------------------------------------------------------------------------------
