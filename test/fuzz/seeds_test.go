package fuzz

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// seedDir is the committed seed corpus of FuzzRenderedChildrenAreAccepted.
var seedDir = filepath.Join("testdata", "fuzz", "FuzzRenderedChildrenAreAccepted")

// refusedSeeds are the seeds that must be refused, and by whom; every other
// seed must be accepted. The fuzz target skips what is refused, so without
// this a schema that came to refuse valid specs would pass it.
var refusedSeeds = map[string]outcome{
	"refused-by-schema":                  schema,
	"readwriteoncepod-with-another-mode": schema,
	"more-pods-than-the-peer-list":       schema,
}

// maxRefusedShare bounds the share of the seed corpus that may be refused.
const maxRefusedShare = 0.25

func TestSeedCorpusIsAcceptedOrRefusedAsNamed(t *testing.T) {
	entries, err := os.ReadDir(seedDir)
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, e := range entries {
		data := readSeed(t, filepath.Join(seedDir, e.Name()))
		want, ok := refusedSeeds[e.Name()]
		if !ok {
			want = accepted
		}
		got, why := check(t, data)
		if got != accepted {
			refused++
		}
		if got != want {
			t.Errorf("seed %s: refused by %s (%v), want refused by %s", e.Name(), got, why, want)
		}
	}
	if share := float64(refused) / float64(len(entries)); share > maxRefusedShare {
		t.Errorf("%d of %d seeds are refused, more than %.0f%%", refused, len(entries), 100*maxRefusedShare)
	}
	t.Logf("%d seeds, %d refused", len(entries), refused)
}

// readSeed decodes a corpus file of one []byte value, as go test writes it.
func readSeed(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	header, value, ok := strings.Cut(strings.TrimSpace(string(raw)), "\n")
	inner, found := strings.CutPrefix(value, "[]byte(")
	inner, closed := strings.CutSuffix(inner, ")")
	if !ok || header != "go test fuzz v1" || !found || !closed {
		t.Fatalf("%s: not a corpus file of one []byte", path)
	}
	data, err := strconv.Unquote(inner)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(data)
}
