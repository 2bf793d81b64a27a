package pgcluster

import (
	"maps"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rpcbench/rpcbench/internal/leftover"
)

func TestDatabaseName(t *testing.T) {
	tests := []struct {
		prefix string
		seq    uint64
		random uint32
		want   string
	}{
		{"bank", 1, 0xabc, "bank_1_00000abc"},
		{"TestFoo/bar baz", 12, 0xffffffff, "testfoo_bar_baz_12_ffffffff"},
		{"", 3, 0, "db_3_00000000"},
		{"9lives", 1, 1, "db_9lives_1_00000001"},
		{"Ünï-code", 1, 1, "_n__code_1_00000001"},
		{strings.Repeat("x", 100), 123, 7, strings.Repeat("x", 63-len("_123_00000007")) + "_123_00000007"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := databaseName(tt.prefix, tt.seq, tt.random)
			if got != tt.want {
				t.Errorf("databaseName(%q, %d, %#x) = %q, want %q", tt.prefix, tt.seq, tt.random, got, tt.want)
			}
			if len(got) > maxIdentifier {
				t.Errorf("len(%q) = %d, want <= %d", got, len(got), maxIdentifier)
			}
		})
	}
}

// TestOwnedName: a database's name starts with its owner, which
// leftover.Parse reads back, and fits however long its prefix.
func TestOwnedName(t *testing.T) {
	const owner = "rpcbench_0123abcd_42_9000_"
	tests := []struct {
		prefix string
		seq    uint64
		want   string
	}{
		{"bank", 1, owner + "1_bank"},
		{"TestFoo/bar baz", 12, owner + "12_testfoo_bar_baz"},
		{"", 3, owner + "3_"},
		{"Ünï-code", 1, owner + "1__n__code"},
		{strings.Repeat("x", 100), 123, (owner + "123_" + strings.Repeat("x", 100))[:maxIdentifier]},
	}
	for _, tt := range tests {
		got := ownedName(owner, tt.prefix, tt.seq)
		if got != tt.want {
			t.Errorf("ownedName(%q, %q, %d) = %q, want %q", owner, tt.prefix, tt.seq, got, tt.want)
		}
		if o, ok := leftover.Parse(got, "_"); !ok || o != (leftover.Owner{Space: "0123abcd", PID: 42, Start: 9000}) {
			t.Errorf("Parse(%q) = %+v, %v; want its owner", got, o, ok)
		}
	}
}

// TestWithDatabase checks that the derived DSN names the new database and
// otherwise reaches the same server, as pgx reads it.
func TestWithDatabase(t *testing.T) {
	tests := []struct {
		name string
		dsn  string
	}{
		{"url", "postgres://u:secret@h:5433/old?sslmode=disable"},
		{"url_without_database", "postgres://u@h"},
		{"url_socket", "postgres://u@/old?host=/tmp/x&port=5432&sslmode=disable"},
		{"url_dbname_param", "postgresql://u@h/?dbname=old&sslmode=disable"},
		{"url_database_param", "postgres://u@h/path?database=old"},
		{"url_params_kept", "postgres://u@h/old?sslmode=disable&dbname=other&options=-c%20search_path%3Dx&application_name=a+b"},
		{"url_escaped_password", "postgres://u:p%40ss%2Fw%20d@h/old"},
		{"url_ipv6", "postgres://u@[::1]:5433/old"},
		{"url_multi_host", "postgres://u@h1:5432,h2:5433/old?target_session_attrs=read-write"},
		{"keyword_value", "host=h port=5433 user=u password=secret dbname=old sslmode=disable"},
		{"keyword_value_quoted", "host=h user=u dbname='old db' "},
		{"keyword_value_without_database", "host=h user=u"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := withDatabase(tt.dsn, "new_1_00000001")
			before, err := pgx.ParseConfig(tt.dsn)
			if err != nil {
				t.Fatal(err)
			}
			after, err := pgx.ParseConfig(got)
			if err != nil {
				t.Fatalf("pgx cannot parse %q: %v", got, err)
			}
			if after.Database != "new_1_00000001" {
				t.Errorf("%q names database %q, want new_1_00000001", got, after.Database)
			}
			if after.Host != before.Host || after.Port != before.Port || after.User != before.User || after.Password != before.Password ||
				!maps.Equal(after.RuntimeParams, before.RuntimeParams) || len(after.Fallbacks) != len(before.Fallbacks) {
				t.Errorf("%q reaches %s@%s:%d, want %s@%s:%d as %q did",
					got, after.User, after.Host, after.Port, before.User, before.Host, before.Port, tt.dsn)
			}
		})
	}
}

func TestSocketDSN(t *testing.T) {
	for _, dir := range []string{"/tmp/pgcluster-123", "/tmp/a b&c=d%e+f?g#h"} {
		t.Run(dir, func(t *testing.T) {
			dsn := socketDSN(dir, "db_1")
			cfg, err := pgx.ParseConfig(dsn)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != dir || cfg.Port != port || cfg.User != superuser || cfg.Database != "db_1" || cfg.TLSConfig != nil {
				t.Errorf("%q reaches %s@%s:%d/%s (TLS %v), want %s@%s:%d/db_1 without TLS",
					dsn, cfg.User, cfg.Host, cfg.Port, cfg.Database, cfg.TLSConfig != nil, superuser, dir, port)
			}
		})
	}
}
