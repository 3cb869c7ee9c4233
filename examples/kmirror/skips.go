package main

import (
	"fmt"
	"io"

	"github.com/kmirror/kmirror/mirror"
)

// printSkips prints, for -check, the topics the configuration alone shows
// will not be replicated (a "__" topic or an MM2 internal topic listed in
// topics, a listed topic that topics.exclude removes, a listed topic whose
// name makes it a cycle) or will be replicated without checkpoints (an
// allowed collision), each with the reason. Skips that depend on the
// topics present on the clusters are reported at run time, in the log and
// in /status.
func printSkips(w io.Writer, st mirror.Status) {
	n := 0
	for _, f := range st.Flows {
		n += len(f.Skipped)
	}
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "\n# topics listed in the configuration that are not replicated (%d)\n", n)
	for _, f := range st.Flows {
		for _, s := range f.Skipped {
			what := "not replicated"
			if s.Replicated {
				what = "replicated without checkpoints"
			}
			fmt.Fprintf(w, "#   %s: %s: %s: %s\n", f.Name, s.Topic, what, s.Reason)
		}
	}
}
