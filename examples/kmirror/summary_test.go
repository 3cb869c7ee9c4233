package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

func writeProps(t *testing.T, props string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const embeddedAB = "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\na->b.enabled = true\n"

// TestSummaryInterval: with -summary-interval the runner logs a
// "replication summary" line per flow; a flow fed with records shows a
// positive rate. With 0 there is none.
func TestSummaryInterval(t *testing.T) {
	t.Parallel()
	cfg := writeProps(t, embeddedAB)
	_, logs, _, _ := started(t, "-config", cfg, "-embedded", "-demo-topics", "orders:2", "-demo-rate", "100", "-summary-interval", "300ms")
	re := regexp.MustCompile(`level=INFO msg="replication summary" flow=a->b state=RUNNING records_per_sec=([0-9.]+) bytes_per_sec=([0-9]+) lag=[0-9]+ groups_checkpointed=[0-9]+ interval=[0-9.]+m?s`)
	eventually(t, "a summary line with records flowing", func() string {
		for _, m := range re.FindAllStringSubmatch(logs.String(), -1) {
			r, _ := strconv.ParseFloat(m[1], 64)
			b, _ := strconv.ParseInt(m[2], 10, 64)
			if r > 0 && b > 0 {
				return ""
			}
		}
		return "no summary line with positive rates yet:\n" + logs.String()
	})
}

func TestSummaryDisabled(t *testing.T) {
	t.Parallel()
	cfg := writeProps(t, embeddedAB)
	base, logs, cancel, wait := started(t, "-config", cfg, "-embedded", "-demo-topics", "orders:1", "-demo-rate", "50", "-summary-interval", "0")
	// 200 records at 50/s: the runner ran for several seconds.
	eventually(t, "200 records replicated", func() string {
		_, body := get(t, base+"/status")
		var st statusDoc
		if err := json.Unmarshal(body, &st); err != nil {
			return err.Error()
		}
		for _, f := range st.Flows {
			if f.Name == "a->b" && f.Records >= 200 {
				return ""
			}
		}
		return fmt.Sprintf("%+v", st.Flows)
	})
	cancel()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`replication summary`).MatchString(logs.String()) {
		t.Errorf("-summary-interval 0 logged a summary:\n%s", logs)
	}
}
