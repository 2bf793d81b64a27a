package stackbuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// sourcesTGZ is the adapters' sources the builds need, from the
// repository's adapters/ (see includeSource), so that an rpcbench
// installed with go install builds adapters without the repository. Go's
// embed cannot reach into the adapters' own modules, hence an archive;
// TestSourcesFresh fails when it is stale, and
//
//	go test ./internal/stackbuild -run TestSourcesFresh -update
//
// rewrites it.
//
//go:embed sources.tgz
var sourcesTGZ []byte

// file is one file of the archive.
type file struct {
	path string // slash-separated, relative to adapters/
	mode fs.FileMode
	data []byte
}

// includeSource reports whether the file at rel (slash-separated,
// relative to adapters/) goes into the archive: what go build, npm and
// python need to build and run each adapter, and no tests, test helper
// packages, docs or installed packages.
func includeSource(rel string) bool {
	dir, name := path.Split(rel)
	top, _, _ := strings.Cut(rel, "/")
	for _, d := range strings.Split(strings.TrimSuffix(dir, "/"), "/") {
		if strings.HasSuffix(d, "test") || strings.HasPrefix(d, ".") || d == "node_modules" || d == "tests" || d == "__pycache__" {
			return false
		}
	}
	switch top {
	case "gokit", "grpcgo", "connectgo":
		return name == "go.mod" || name == "go.sum" || (strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go"))
	case "grpcjs":
		return dir == "grpcjs/" && (strings.HasSuffix(name, ".js") || name == "package.json" || name == "package-lock.json" || name == "adapter-grpcjs")
	case "grpcio":
		return dir == "grpcio/" && (strings.HasSuffix(name, ".py") || name == "adapter-grpcio")
	}
	return false
}

// readTree returns the files of root (the repository's adapters/) that
// includeSource takes, in path order.
func readTree(root string) ([]file, error) {
	var files []file
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if d.Name() == "node_modules" || (rel != "." && strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !includeSource(rel) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, file{path: rel, mode: normalMode(info.Mode()), data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("stackbuild: reading the adapters' sources: %w", err)
	}
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.path, b.path) })
	return files, nil
}

// normalMode is 0755 for a file anyone may execute, else 0644: all the
// archive keeps of a mode.
func normalMode(m fs.FileMode) fs.FileMode {
	if m&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// writeArchive is files as a gzipped tar that depends on nothing but
// their paths, modes and contents.
func writeArchive(files []file) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, f := range files {
		hdr := &tar.Header{Name: f.path, Mode: int64(f.mode), Size: int64(len(f.data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// readArchive is the files of a gzipped tar writeArchive made.
func readArchive(tgz []byte) ([]file, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, fmt.Errorf("stackbuild: embedded sources: %w", err)
	}
	tr := tar.NewReader(zr)
	var files []file
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("stackbuild: embedded sources: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg || !fs.ValidPath(hdr.Name) {
			return nil, fmt.Errorf("stackbuild: embedded sources: unexpected entry %q", hdr.Name)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("stackbuild: embedded sources: %w", err)
		}
		files = append(files, file{path: hdr.Name, mode: fs.FileMode(hdr.Mode).Perm(), data: data})
	}
}

var embedded = sync.OnceValues(func() ([]file, error) { return readArchive(sourcesTGZ) })

// sourcesDigest names the embedded sources: a cache built from other
// sources is not reused.
var sourcesDigest = sync.OnceValue(func() string {
	sum := sha256.Sum256(sourcesTGZ)
	return hex.EncodeToString(sum[:8])
})

// extract writes the embedded files under each of dirs (relative to
// adapters/) into dst, keeping their paths below adapters/.
func extract(dst string, dirs ...string) error {
	files, err := embedded()
	if err != nil {
		return err
	}
	n := 0
	for _, f := range files {
		top, _, _ := strings.Cut(f.path, "/")
		if !slices.Contains(dirs, top) {
			continue
		}
		p := filepath.Join(dst, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("stackbuild: %w", err)
		}
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return fmt.Errorf("stackbuild: %w", err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("stackbuild: the embedded sources have nothing of %v", dirs)
	}
	return nil
}

// embeddedFile is the embedded file at rel (relative to adapters/).
func embeddedFile(rel string) ([]byte, error) {
	files, err := embedded()
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if f.path == rel {
			return f.data, nil
		}
	}
	return nil, fmt.Errorf("stackbuild: the embedded sources have no %s", rel)
}

// requireLine matches a go.mod requirement, in a block or not.
var requireLine = regexp.MustCompile(`(?m)^(?:require)?\s+(\S+)\s+(v\S+)`)

// goRequire is the version the embedded adapters/DIR/go.mod requires of
// module; "" when it requires none (TestShipped proves each does).
func goRequire(dir, module string) string {
	data, err := embeddedFile(dir + "/go.mod")
	if err != nil {
		return ""
	}
	for _, m := range requireLine.FindAllStringSubmatch(string(data), -1) {
		if m[1] == module {
			return m[2]
		}
	}
	return ""
}

// npmShipped is the @grpc/grpc-js release the embedded
// adapters/grpcjs/package.json pins; "" when it pins none.
func npmShipped() string {
	data, err := embeddedFile("grpcjs/package.json")
	if err != nil {
		return ""
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if json.Unmarshal(data, &pkg) != nil {
		return ""
	}
	return pkg.Dependencies["@grpc/grpc-js"]
}
