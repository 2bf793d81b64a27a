package report

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// An evidence directory's logs/ holds bundles, not a file per log: a
// group's run leaves a server log, an adapter's stderr and a trace for
// each of hundreds of cases, and a file system spends a block on each.
// Commit gathers a scenario's logs, those of every column it runs in,
// into SCENARIO.logs (SCENARIO-2.logs, ... past MaxBundleBytes), a text
// file that reads as tail prints several files:
//
//	#rpcbench logs: the logs of scenario grpc_close_after_exec, each after a "==> NAME (N bytes) <==" line
//	==> adapter-grpc_close_after_exec_grpcgo_default.log (312 bytes) <==
//	grpcgo: 09:15:21.504865 init: ...
//
//	==> server-grpc_close_after_exec_grpcgo_default.log (2210 bytes) <==
//	{"time":...,"msg":"STORE_OPEN",...}
//
// Each file's bytes follow its line whole, then one newline. ReadLogs
// gives back every file by its name, bundled or not.

// BundleSuffix ends the name of a bundle in logs/.
const BundleSuffix = ".logs"

// MaxBundleBytes bounds a bundle: a scenario whose logs are larger goes
// on in SCENARIO-2.logs. With each log cut to MaxLogBytes, no evidence
// file reaches 1 MiB.
const MaxBundleBytes = 768 << 10

const bundleHead = "#rpcbench logs: the logs of scenario "

// bundleName is the name of the n-th bundle (from 1) of scenario.
func bundleName(scenario string, n int) string {
	if n <= 1 {
		return scenario + BundleSuffix
	}
	return scenario + "-" + strconv.Itoa(n) + BundleSuffix
}

// writeBundles replaces the files of dir that belong to a case (LogCase)
// by bundles, one scenario's after another: scenarioOf names the
// scenario a case's logs go with (nil: the case's own name). Files of no
// case stay as they are. Each bundle is written whole, then renamed into
// place, and only then are its files removed.
func writeBundles(dir string, scenarioOf func(caseName string) string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("report: bundle logs: %w", err)
	}
	byScenario := map[string][]string{}
	for _, e := range entries {
		c := LogCase(e.Name())
		if c == "" || !e.Type().IsRegular() || strings.HasSuffix(e.Name(), BundleSuffix) {
			continue
		}
		s := c
		if scenarioOf != nil {
			s = cmp.Or(scenarioOf(c), c)
		}
		byScenario[s] = append(byScenario[s], e.Name())
	}
	for _, s := range slices.Sorted(maps.Keys(byScenario)) {
		names := byScenario[s]
		slices.Sort(names)
		n, part := 1, []string{}
		var size int64
		flush := func() error {
			if len(part) == 0 {
				return nil
			}
			err := writeBundle(dir, s, bundleName(s, n), part)
			n, part, size = n+1, nil, 0
			return err
		}
		for _, name := range names {
			fi, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				return fmt.Errorf("report: bundle logs: %w", err)
			}
			if size > 0 && size+fi.Size() > MaxBundleBytes {
				if err := flush(); err != nil {
					return err
				}
			}
			part = append(part, name)
			size += fi.Size() + int64(len(name)) + 32
		}
		if err := flush(); err != nil {
			return err
		}
	}
	return nil
}

// writeBundle writes the files names of dir into dir/bundle, then
// removes them.
func writeBundle(dir, scenario, bundle string, names []string) error {
	path := filepath.Join(dir, bundle)
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("report: bundle logs: %w", err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "%s%s, each after a \"==> NAME (N bytes) <==\" line\n", bundleHead, scenario)
	for _, name := range names {
		b, rerr := os.ReadFile(filepath.Join(dir, name))
		if rerr != nil {
			err = rerr
			break
		}
		fmt.Fprintf(w, "==> %s (%d bytes) <==\n", name, len(b))
		w.Write(b)
		w.WriteString("\n")
	}
	err = errors.Join(err, w.Flush(), f.Close())
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("report: bundle logs: %w", err)
	}
	for _, name := range names {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("report: bundle logs: %w", err)
		}
	}
	return nil
}

// ReadLogs returns every log of the logs/ directory dir by its file's
// name: the files of its bundles and the files beside them. A missing
// dir holds none. A bundle that does not parse is an error naming it;
// the files read before it are returned with it.
func ReadLogs(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("report: logs: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			errs = append(errs, fmt.Errorf("report: logs: %w", err))
			continue
		}
		if !strings.HasSuffix(e.Name(), BundleSuffix) {
			out[e.Name()] = b
			continue
		}
		if err := parseBundle(b, out); err != nil {
			errs = append(errs, fmt.Errorf("report: logs: %s: %w", e.Name(), err))
		}
	}
	return out, errors.Join(errs...)
}

// parseBundle adds the files of bundle b to out.
func parseBundle(b []byte, out map[string][]byte) error {
	if !bytes.HasPrefix(b, []byte(bundleHead)) {
		return errors.New("not a logs bundle: it does not start " + strconv.Quote(bundleHead))
	}
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return io.ErrUnexpectedEOF
	}
	rest := b[i+1:]
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return fmt.Errorf("unfinished line %q", rest)
		}
		head := string(rest[:i])
		name, size, ok := parseFileLine(head)
		if !ok {
			return fmt.Errorf("line %q: want ==> NAME (N bytes) <==", head)
		}
		rest = rest[i+1:]
		if int64(len(rest)) < size+1 || rest[size] != '\n' {
			return fmt.Errorf("%s: holds fewer than the %d bytes its line says, or no newline after them", name, size)
		}
		if _, dup := out[name]; dup {
			return fmt.Errorf("%s: twice", name)
		}
		out[name] = rest[:size:size]
		rest = rest[size+1:]
	}
	return nil
}

// parseFileLine parses "==> NAME (N bytes) <==".
func parseFileLine(line string) (name string, size int64, ok bool) {
	s, ok1 := strings.CutPrefix(line, "==> ")
	s, ok2 := strings.CutSuffix(s, " bytes) <==")
	i := strings.LastIndex(s, " (")
	if !ok1 || !ok2 || i <= 0 {
		return "", 0, false
	}
	name = s[:i]
	size, err := strconv.ParseInt(s[i+2:], 10, 64)
	if err != nil || size < 0 || name != filepath.Base(name) || strings.ContainsAny(name, "/\x00") {
		return "", 0, false
	}
	return name, size, true
}
