package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
)

// ErrRegression is returned (wrapped) by Compare when a figure got worse beyond the threshold.
var ErrRegression = errors.New("regression")

// DefaultThreshold is the change, in percent, below which compare calls a difference noise:
// runs on the 2-core development box vary up to 2× run to run, so compare medians of several.
const DefaultThreshold = 25.0

// CompareOptions are the arguments of `tuma-lab bench compare`.
type CompareOptions struct {
	Old, New  []string // result files (globs already expanded)
	Threshold float64  // percent
}

// ParseCompareArgs reads `[--threshold PCT] OLD... -- NEW...` or `OLD NEW`. Arguments with glob
// characters are expanded (for shells that pass them through, or quoted patterns).
func ParseCompareArgs(args []string, out io.Writer) (CompareOptions, error) {
	o := CompareOptions{Threshold: DefaultThreshold}
	fs := flag.NewFlagSet("tuma-lab bench compare", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { fmt.Fprint(out, Usage) }
	fs.Float64Var(&o.Threshold, "threshold", o.Threshold, "")
	if err := fs.Parse(args); err != nil {
		return CompareOptions{}, err
	}
	if o.Threshold <= 0 || math.IsNaN(o.Threshold) || math.IsInf(o.Threshold, 0) {
		return CompareOptions{}, fmt.Errorf("--threshold must be a positive percentage, got %v", o.Threshold)
	}
	rest := fs.Args()
	var oldArgs, newArgs []string
	if i := slices.Index(rest, "--"); i >= 0 {
		oldArgs, newArgs = rest[:i], rest[i+1:]
	} else if len(rest) == 2 {
		oldArgs, newArgs = rest[:1], rest[1:]
	} else {
		return CompareOptions{}, errors.New("compare needs two result files (OLD NEW), or two lists separated by -- (OLD1 OLD2 -- NEW1 NEW2)")
	}
	var err error
	if o.Old, err = expand(oldArgs); err != nil {
		return CompareOptions{}, fmt.Errorf("old side: %w", err)
	}
	if o.New, err = expand(newArgs); err != nil {
		return CompareOptions{}, fmt.Errorf("new side: %w", err)
	}
	return o, nil
}

func expand(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		if !strings.ContainsAny(a, "*?[") {
			out = append(out, a)
			continue
		}
		m, err := filepath.Glob(a)
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %w", a, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("no file matches %q", a)
		}
		out = append(out, m...)
	}
	if len(out) == 0 {
		return nil, errors.New("no result files")
	}
	return out, nil
}

// Comparison is one figure on both sides.
type Comparison struct {
	Name, Unit, Better string
	Old, New           float64 // medians
	OldN, NewN         int     // runs that had the figure
	ChangePct          float64 // (new − old) / |old|; NaN when old is 0 or a side is missing
	Verdict            string  // "regression", "improvement" or "" (within the threshold, or neither way better)
}

// The verdicts.
const (
	verdictRegression  = "regression"
	verdictImprovement = "improvement"
)

// compareResults sets the medians of every figure side by side, in the order the figures
// first appear.
func compareResults(before, after []Result, threshold float64) []Comparison {
	type side struct{ before, after []float64 }
	vals := map[string]*side{}
	meta := map[string]Figure{}
	var order []string
	collect := func(rs []Result, isNew bool) {
		for _, r := range rs {
			for _, f := range r.Figures {
				s, ok := vals[f.Name]
				if !ok {
					s = &side{}
					vals[f.Name] = s
					meta[f.Name] = f
					order = append(order, f.Name)
				}
				if isNew {
					s.after = append(s.after, f.Value)
				} else {
					s.before = append(s.before, f.Value)
				}
			}
		}
	}
	collect(before, false)
	collect(after, true)
	out := make([]Comparison, 0, len(order))
	for _, name := range order {
		s, f := vals[name], meta[name]
		c := Comparison{Name: name, Unit: f.Unit, Better: f.Better, Old: median(s.before), New: median(s.after),
			OldN: len(s.before), NewN: len(s.after), ChangePct: math.NaN()}
		if c.OldN > 0 && c.NewN > 0 {
			c.ChangePct, c.Verdict = judge(c.Old, c.New, f.Better, threshold)
		}
		out = append(out, c)
	}
	return out
}

// judge is the change from old to new and whether it is beyond threshold in the bad (or
// good) direction. From 0, any rise is beyond every threshold.
func judge(before, after float64, better string, threshold float64) (float64, string) {
	change := math.NaN()
	switch {
	case before != 0:
		change = (after - before) / math.Abs(before) * 100
	case after == 0:
		change = 0
	}
	up := after > before && (math.IsNaN(change) || change > threshold)
	down := after < before && (math.IsNaN(change) || change < -threshold)
	switch {
	case better == lowerBetter && up, better == higherBetter && down:
		return change, verdictRegression
	case better == lowerBetter && down, better == higherBetter && up:
		return change, verdictImprovement
	}
	return change, ""
}

// Compare reads the result files and prints the comparison. It returns an error wrapping
// ErrRegression when any figure regressed beyond the threshold.
func Compare(o CompareOptions, stdout io.Writer) error {
	read := func(paths []string) ([]Result, error) {
		var rs []Result
		for _, p := range paths {
			r, err := ReadResult(p)
			if err != nil {
				return nil, err
			}
			rs = append(rs, r)
		}
		return rs, nil
	}
	before, err := read(o.Old)
	if err != nil {
		return err
	}
	after, err := read(o.New)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "old: %d run(s) of %s at %s\nnew: %d run(s) of %s at %s\n\n", len(before), before[0].Scenario,
		commits(before), len(after), after[0].Scenario, commits(after))
	for _, w := range compareWarnings(before, after) {
		fmt.Fprintln(stdout, "warning:", w)
	}
	cs := compareResults(before, after, o.Threshold)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "figure\told (median of %d)\tnew (median of %d)\tchange\t\n", len(before), len(after))
	var regressed []string
	for _, c := range cs {
		change := "—"
		if !math.IsNaN(c.ChangePct) {
			change = fmt.Sprintf("%+.1f%%", c.ChangePct)
		}
		verdict := ""
		switch c.Verdict {
		case verdictRegression:
			verdict = "REGRESSION"
			regressed = append(regressed, c.Name)
		case verdictImprovement:
			verdict = "improved"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, figureStr(c.Old, c.OldN, c.Unit), figureStr(c.New, c.NewN, c.Unit),
			change, verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nthreshold %g%%: changes within it are noise; only changes in the bad direction are regressions\n", o.Threshold)
	if len(regressed) > 0 {
		return fmt.Errorf("%w: %s", ErrRegression, strings.Join(regressed, ", "))
	}
	return nil
}

func figureStr(v float64, n int, unit string) string {
	switch {
	case n == 0:
		return "—"
	case math.Abs(v) >= 1000:
		return count(int64(math.Round(v))) + " " + unit
	case math.Abs(v) >= 100 || v == math.Trunc(v):
		return fmt.Sprintf("%.0f %s", v, unit)
	}
	return fmt.Sprintf("%.2f %s", v, unit)
}

// commits lists the distinct commits of a side, shortened.
func commits(rs []Result) string {
	var cs []string
	for _, r := range rs {
		c := "unknown"
		if r.Commit != "" {
			c = r.Commit[:min(12, len(r.Commit))]
			if r.Dirty {
				c += "+dirty"
			}
		}
		if !slices.Contains(cs, c) {
			cs = append(cs, c)
		}
	}
	return strings.Join(cs, ", ")
}

// compareWarnings notes what makes the sides not comparable: other scenarios or flags.
func compareWarnings(before, after []Result) []string {
	all := append(slices.Clone(before), after...)
	var w []string
	ref := all[0]
	for _, r := range all[1:] {
		if r.Scenario != ref.Scenario {
			w = append(w, fmt.Sprintf("scenarios differ (%s, %s)", ref.Scenario, r.Scenario))
			break
		}
	}
	var keys []string
	for k := range ref.Config {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "json" || k == "url" {
			continue // where the results go and where the server ran do not change the load
		}
		for _, r := range all[1:] {
			if r.Config[k] != ref.Config[k] {
				w = append(w, fmt.Sprintf("--%s differs (%q, %q)", k, ref.Config[k], r.Config[k]))
				break
			}
		}
	}
	return w
}
