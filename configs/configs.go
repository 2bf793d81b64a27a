// Package configs holds the configurations a gRPC client stack is judged
// in, as files: the built-in ones, embedded in rpcbench, and a user's,
// read by the same code (Load), so that the two are one mechanism.
//
// A configuration is a JSON object:
//
//	{
//	  "name": "retry-internal",          // its column: [a-z0-9] words joined by - or +
//	  "doc": "what it is, in a sentence",
//	  "serviceConfig": {...},            // the channel's service config (gRFC A2), or
//	  "serviceConfigFile": "sc.json",    // the file holding it, relative to this one
//	  "keepalive": {"time": "10s", "timeout": "1s", "permitWithoutStream": false},
//	  "waitForReady": false,             // every call waits for the channel to be ready
//	  "idempotencyKey": false,           // every debit carries an idempotency-key
//	  "needs": ["retry_policy"],         // optional: the capabilities it needs
//	  "runs": ["plain", "retry"]         // optional: the kinds of scenario it runs
//	}
//
// Only "name" is required. Without "needs", a configuration needs what
// it configures: retry_policy for a retryPolicy, per_attempt_timeout for
// its perAttemptRecvTimeout, hedging for a hedgingPolicy, throttling for
// retryThrottling, keepalive and wait_for_ready for those keys. Without
// "runs", it runs the plain scenarios and those of what it configures:
// retry for a retryPolicy, hedge, per-attempt, keepalive. An unknown key,
// a value of the wrong type or a name that is not valid is an error
// naming the file and line.
package configs

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/internal/cut"
)

// files are the built-in configurations and the service configs they
// name.
//
//go:embed *.json serviceconfig/*.json
var files embed.FS

// builtin are the built-in configurations' files, in scorecard order.
var builtin = []string{"default.json", "retry.json", "retry-key.json", "throttled.json", "hedged.json", "per-attempt.json", "keepalive.json"}

// Builtin returns the built-in configurations, in scorecard order. They
// are read once; each call returns a copy of its own.
func Builtin() []cut.GRPCConfig { return slices.Clone(builtinOnce()) }

// builtinOnce reads the built-in configurations' files, once: the judge
// asks for them for every pin it reads.
var builtinOnce = sync.OnceValue(readBuiltin)

func readBuiltin() []cut.GRPCConfig {
	var out []cut.GRPCConfig
	for _, name := range builtin {
		data, err := files.ReadFile(name)
		if err == nil {
			var g cut.GRPCConfig
			g, err = Parse("configs/"+name, data, func(rel string) ([]byte, error) { return fs.ReadFile(files, rel) })
			out = append(out, g)
		}
		if err != nil {
			panic(err) // TestBuiltin reads every one
		}
	}
	return out
}

// BuiltinNames are the built-in configurations' names, in order.
func BuiltinNames() []string {
	var out []string
	for _, g := range Builtin() {
		out = append(out, g.Name)
	}
	return out
}

// Load reads the configuration in the file at path; a serviceConfigFile
// is read relative to its directory.
func Load(path string) (cut.GRPCConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return cut.GRPCConfig{}, fmt.Errorf("configs: %w", err)
	}
	dir := filepath.Dir(path)
	return Parse(path, data, func(rel string) ([]byte, error) {
		if !filepath.IsAbs(rel) {
			rel = filepath.Join(dir, rel)
		}
		return os.ReadFile(rel)
	})
}

// ErrInvalid is wrapped by every error of a configuration that cannot
// be read as one.
var ErrInvalid = errors.New("configs: invalid configuration")

// nameRE is what a configuration's name may be: it becomes part of
// scenario names (- dropped, + as _) and a column heading.
var nameRE = regexp.MustCompile(`^[a-z0-9]+([+-][a-z0-9]+)*$`)

// ValidName reports whether name may name a configuration.
func ValidName(name string) bool {
	return nameRE.MatchString(name) && len(name) <= 32 && !slices.Contains(reserved, name)
}

// reserved are the reference column's configuration names and the
// server columns': a configuration of the same name would be read as
// theirs.
var reserved = []string{"client", "server"}

// keepaliveFile is a configuration's keepalive.
type keepaliveFile struct {
	Time                string `json:"time"`
	Timeout             string `json:"timeout"`
	PermitWithoutStream bool   `json:"permitWithoutStream"`
}

// Parse reads a configuration from data, read from source (named in
// errors); read returns a file a serviceConfigFile names.
func Parse(source string, data []byte, read func(rel string) ([]byte, error)) (cut.GRPCConfig, error) {
	g := cut.GRPCConfig{Source: source}
	fail := func(line int, format string, args ...any) (cut.GRPCConfig, error) {
		at := source
		if line > 0 {
			at = fmt.Sprintf("%s:%d", source, line)
		}
		return cut.GRPCConfig{}, fmt.Errorf("%w: %s: %s", ErrInvalid, at, fmt.Sprintf(format, args...))
	}
	keys, err := topKeys(data)
	if err != nil {
		var se *syntaxError
		if errors.As(err, &se) {
			return fail(se.line, "%v", se.err)
		}
		return fail(0, "%v", err)
	}
	var (
		scFile            string
		ka                *keepaliveFile
		needs             []string
		runs              []string
		hasNeeds, hasRuns bool
	)
	for _, k := range keys {
		var dst any
		switch k.name {
		case "name":
			dst = &g.Name
		case "doc":
			dst = &g.Doc
		case "serviceConfig":
			if !bytes.HasPrefix(bytes.TrimSpace(k.value), []byte("{")) {
				return fail(k.line, "serviceConfig is not a JSON object")
			}
			g.ServiceConfig = slices.Clone(k.value)
			continue
		case "serviceConfigFile":
			dst = &scFile
		case "keepalive":
			// encoding/json matches keys regardless of case and keeps
			// the last of two: its keys are checked as the file's are.
			sub, err := topKeys(k.value)
			if err != nil {
				return fail(k.line, "keepalive: %v", err)
			}
			for _, sk := range sub {
				if !slices.Contains([]string{"time", "timeout", "permitWithoutStream"}, sk.name) {
					return fail(k.line+sk.line-1, "keepalive: unknown key %q (want time, timeout, permitWithoutStream)", sk.name)
				}
			}
			ka = &keepaliveFile{}
			dst = ka
		case "waitForReady":
			dst = &g.WaitForReady
		case "idempotencyKey":
			dst = &g.Key
		case "needs":
			dst, hasNeeds = &needs, true
		case "runs":
			dst, hasRuns = &runs, true
		default:
			return fail(k.line, "unknown key %q (want name, doc, serviceConfig, serviceConfigFile, keepalive, waitForReady, idempotencyKey, needs, runs)", k.name)
		}
		if err := strict(k.value, dst); err != nil {
			return fail(k.line, "%s: %v", k.name, err)
		}
	}
	line := func(name string) int {
		for _, k := range keys {
			if k.name == name {
				return k.line
			}
		}
		return 0
	}
	switch {
	case g.Name == "":
		return fail(0, `no "name": a configuration needs one, its column's`)
	case !nameRE.MatchString(g.Name) || len(g.Name) > 32:
		return fail(line("name"), "name %q: want at most 32 of a-z and 0-9, in words joined by - or + (retry-internal)", g.Name)
	case slices.Contains(reserved, g.Name):
		return fail(line("name"), "name %q is the reference or server columns' (choose another)", g.Name)
	}
	if scFile != "" {
		if g.ServiceConfig != nil {
			return fail(line("serviceConfigFile"), "both serviceConfig and serviceConfigFile: give one")
		}
		b, err := read(scFile)
		if err != nil {
			return fail(line("serviceConfigFile"), "serviceConfigFile: %v", err)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			return fail(line("serviceConfigFile"), "serviceConfigFile %s is not a JSON object: %v", scFile, err)
		}
		g.ServiceConfig = b
	}
	uses, err := serviceConfigUses(g.ServiceConfig)
	if err != nil {
		return fail(line(firstOf(scFile != "", "serviceConfigFile", "serviceConfig")), "service config: %v", err)
	}
	if ka != nil {
		k, err := ka.parse()
		if err != nil {
			return fail(line("keepalive"), "keepalive: %v", err)
		}
		g.Keepalive = &k
		uses.keepalive = true
	}
	uses.waitForReady = g.WaitForReady
	g.Needs = uses.needs()
	if hasNeeds {
		for _, n := range needs {
			if !slices.Contains(cut.CapNames, n) {
				return fail(line("needs"), "needs %q: no such capability (want one of %s)", n, strings.Join(cut.CapNames, ", "))
			}
		}
		g.Needs = needs
	}
	g.Runs = uses.runs()
	if hasRuns {
		if len(runs) == 0 {
			return fail(line("runs"), "runs is empty: the configuration would run no scenario")
		}
		for i, r := range runs {
			if !slices.Contains(cut.Runs, r) {
				return fail(line("runs"), "runs %q: no such kind of scenario (want some of %s)", r, strings.Join(cut.Runs, ", "))
			}
			if slices.Contains(runs[:i], r) {
				return fail(line("runs"), "runs %q twice", r)
			}
		}
		g.Runs = runs
	}
	return g, nil
}

func firstOf(cond bool, a, b string) string {
	if cond {
		return a
	}
	return b
}

// parse checks a keepalive's durations.
func (k keepaliveFile) parse() (cut.Keepalive, error) {
	var out cut.Keepalive
	for _, f := range []struct {
		name, v string
		d       *time.Duration
	}{{"time", k.Time, &out.Time}, {"timeout", k.Timeout, &out.Timeout}} {
		d, err := time.ParseDuration(f.v)
		if err != nil || d < time.Millisecond {
			return out, fmt.Errorf("%s %q: want a duration of at least 1ms, such as \"10s\"", f.name, f.v)
		}
		*f.d = d
	}
	out.PermitWithoutStream = k.PermitWithoutStream
	return out, nil
}

// uses are what a configuration configures.
type uses struct {
	retry, perAttempt, hedging, throttling, keepalive, waitForReady bool
}

// needs are the capabilities what it configures needs.
func (u uses) needs() []string {
	var out []string
	for _, c := range []struct {
		on  bool
		cap string
	}{{u.retry, cut.CapRetryPolicy}, {u.throttling, cut.CapThrottling}, {u.hedging, cut.CapHedging},
		{u.perAttempt, cut.CapPerAttempt}, {u.keepalive, cut.CapKeepalive}, {u.waitForReady, cut.CapWaitForReady}} {
		if c.on {
			out = append(out, c.cap)
		}
	}
	return out
}

// runs are the kinds of scenario it runs by default.
func (u uses) runs() []string {
	out := []string{cut.RunPlain}
	for _, c := range []struct {
		on  bool
		run string
	}{{u.retry, cut.RunRetry}, {u.hedging, cut.RunHedge}, {u.perAttempt, cut.RunPerAttempt}, {u.keepalive, cut.RunKeepalive}} {
		if c.on {
			out = append(out, c.run)
		}
	}
	return out
}

// serviceConfigUses reads what a service config configures; it checks
// the shape of what it reads and leaves the rest to the stack, whose
// refusal is the run's ERROR.
func serviceConfigUses(sc json.RawMessage) (uses, error) {
	var u uses
	if sc == nil {
		return u, nil
	}
	if err := checkServiceConfig(sc); err != nil {
		return u, err
	}
	var doc struct {
		MethodConfig []struct {
			RetryPolicy *struct {
				PerAttemptRecvTimeout *string `json:"perAttemptRecvTimeout"`
			} `json:"retryPolicy"`
			HedgingPolicy *json.RawMessage `json:"hedgingPolicy"`
		} `json:"methodConfig"`
		RetryThrottling *json.RawMessage `json:"retryThrottling"`
	}
	if err := json.Unmarshal(sc, &doc); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return u, fmt.Errorf("%s: got a JSON %s, want %s", te.Field, te.Value, kindOf(te.Type.String()))
		}
		return u, err
	}
	for _, m := range doc.MethodConfig {
		if m.RetryPolicy != nil {
			u.retry = true
			u.perAttempt = u.perAttempt || m.RetryPolicy.PerAttemptRecvTimeout != nil
		}
		u.hedging = u.hedging || m.HedgingPolicy != nil
	}
	u.throttling = doc.RetryThrottling != nil
	return u, nil
}

// serviceConfigKeys are the keys of a service config (gRFC A2, with A6's
// retry, hedging and throttling), by the path of the object they are
// in: a key elsewhere is a typo the libraries would silently ignore
// (grpc-go and grpcio do), leaving a configuration that is not what its
// file says.
var serviceConfigKeys = map[string][]string{
	"":                           {"loadBalancingPolicy", "loadBalancingConfig", "methodConfig", "retryThrottling", "healthCheckConfig"},
	"methodConfig":               {"name", "waitForReady", "timeout", "maxRequestMessageBytes", "maxResponseMessageBytes", "retryPolicy", "hedgingPolicy"},
	"methodConfig.name":          {"service", "method"},
	"methodConfig.retryPolicy":   {"maxAttempts", "initialBackoff", "maxBackoff", "backoffMultiplier", "retryableStatusCodes", "perAttemptRecvTimeout"},
	"methodConfig.hedgingPolicy": {"maxAttempts", "hedgingDelay", "nonFatalStatusCodes"},
	"retryThrottling":            {"maxTokens", "tokenRatio"},
}

// checkServiceConfig refuses a key serviceConfigKeys does not know, in
// the objects it knows, naming where it is.
func checkServiceConfig(sc json.RawMessage) error {
	var walk func(path, at string, v any) error
	walk = func(path, at string, v any) error {
		switch x := v.(type) {
		case []any:
			for i, e := range x {
				if err := walk(path, fmt.Sprintf("%s[%d]", at, i), e); err != nil {
					return err
				}
			}
		case map[string]any:
			known, ok := serviceConfigKeys[path]
			if !ok {
				return nil // an object whose keys are a library's own (loadBalancingConfig)
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if !slices.Contains(known, k) {
					where := "the top level"
					if at != "" {
						where = at
					}
					return fmt.Errorf("%s: unknown key %q (want one of %s)", where, k, strings.Join(known, ", "))
				}
				sub := strings.TrimPrefix(path+"."+k, ".")
				if err := walk(sub, strings.TrimPrefix(at+"."+k, "."), x[k]); err != nil {
					return err
				}
			}
		}
		return nil
	}
	var v any
	if err := json.Unmarshal(sc, &v); err != nil {
		return err
	}
	return walk("", "", v)
}

// strict decodes v from data, refusing unknown keys.
func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("got a JSON %s, want %s", te.Value, kindOf(te.Type.String()))
		}
		return err
	}
	return nil
}

func kindOf(goType string) string {
	switch {
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "true or false"
	case goType == "[]string":
		return "a list of strings"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	}
	return "an object"
}

// key is one top-level key of a configuration, with its value and the
// line it is on.
type key struct {
	name  string
	value json.RawMessage
	line  int
}

type syntaxError struct {
	line int
	err  error
}

func (e *syntaxError) Error() string { return e.err.Error() }

// topKeys reads data as one JSON object and returns its keys in order;
// a key given twice is an error.
func topKeys(data []byte) ([]key, error) {
	lineAt := func(off int64) int { return 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n")) }
	dec := json.NewDecoder(bytes.NewReader(data))
	wrap := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return &syntaxError{lineAt(se.Offset), fmt.Errorf("not JSON: %v", err)}
		}
		return &syntaxError{lineAt(dec.InputOffset()), fmt.Errorf("not JSON: %v", err)}
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, wrap(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, &syntaxError{1, errors.New("not a JSON object")}
	}
	var out []key
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, wrap(err)
		}
		name, _ := tok.(string)
		k := key{name: name, line: lineAt(dec.InputOffset())}
		if err := dec.Decode(&k.value); err != nil {
			return nil, wrap(err)
		}
		if slices.ContainsFunc(out, func(o key) bool { return o.name == name }) {
			return nil, &syntaxError{k.line, fmt.Errorf("key %q twice", name)}
		}
		out = append(out, k)
	}
	if _, err := dec.Token(); err != nil {
		return nil, wrap(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &syntaxError{lineAt(dec.InputOffset()), errors.New("more after the object")}
	}
	return out, nil
}
