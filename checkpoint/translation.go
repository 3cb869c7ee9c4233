package checkpoint

import (
	"fmt"
	"strconv"
	"strings"
)

// TranslationHeader is the record header kmirror puts on every checkpoint
// it writes: how the checkpoint's downstream offset was translated, as
// [TranslationInfo.String] encodes it ("exact", "safe;run;reread<=12",
// "safe;sync;reread<=99", or "safe;run" when no bound is known). MM2's
// readers (MirrorClient, RemoteClusterUtils, the checkpoint task) read
// only the key and value, so the header leaves MM2's format unchanged; a
// checkpoint without it (written by Apache MM2 or an older kmirror) has an
// unknown translation. It lets a failover judge checkpoints from the target
// alone, when the cluster holding the offset syncs no longer answers.
const TranslationHeader = "kmirror-translation"

// Record kinds a translation comes from, in [TranslationInfo.Kind].
const (
	// KindRun: kmirror's offset runs ([OffsetRun]).
	KindRun = "run"
	// KindSync: offset syncs alone, MM2's rule (one past the newest sync at
	// or before the group offset).
	KindSync = "sync"
)

// TranslationInfo describes how a checkpoint's downstream offset was
// translated; it is the value of [TranslationHeader].
type TranslationInfo struct {
	// Exact reports the exact translation (see the package
	// documentation): a consumer resuming at the checkpoint re-reads
	// nothing the group had consumed before the checkpointed commit.
	Exact bool
	// Kind is the record kind the translation came from: [KindRun] or
	// [KindSync]; empty when Exact (exact translations come from runs).
	Kind string
	// Reread bounds, for a safe (not exact) translation, the records at
	// target offsets from the checkpoint's downstream offset on that the
	// group had consumed on the source before the checkpointed commit: a
	// consumer resuming there reads at most Reread records again. It is 0
	// when Exact and -1 when no bound is known.
	Reread int64
}

// String encodes t as the header value: "exact", "safe;<kind>;reread<=N",
// or "safe;<kind>" when Reread is negative.
func (t TranslationInfo) String() string {
	if t.Exact {
		return "exact"
	}
	if t.Reread < 0 {
		return "safe;" + t.Kind
	}
	return "safe;" + t.Kind + ";reread<=" + strconv.FormatInt(t.Reread, 10)
}

// ParseTranslationInfo decodes a [TranslationHeader] value. An empty or
// malformed value is an error naming it; callers treat such a checkpoint as
// of unknown translation.
func ParseTranslationInfo(v string) (TranslationInfo, error) {
	if v == "exact" {
		return TranslationInfo{Exact: true}, nil
	}
	parts := strings.Split(v, ";")
	if len(parts) < 2 || len(parts) > 3 || parts[0] != "safe" || (parts[1] != KindRun && parts[1] != KindSync) {
		return TranslationInfo{}, fmt.Errorf("checkpoint: translation header %q: want \"exact\" or \"safe;run|sync;reread<=N\"", v)
	}
	t := TranslationInfo{Kind: parts[1], Reread: -1}
	if len(parts) == 3 {
		n, ok := strings.CutPrefix(parts[2], "reread<=")
		r, err := strconv.ParseInt(n, 10, 64)
		if !ok || err != nil || r < 0 {
			return TranslationInfo{}, fmt.Errorf("checkpoint: translation header %q: bound %q, want reread<=N with N >= 0", v, parts[2])
		}
		t.Reread = r
	}
	return t, nil
}

// info returns the header value of a successful translation.
func (t Translation) info() TranslationInfo {
	if t.Exact {
		return TranslationInfo{Exact: true}
	}
	return TranslationInfo{Kind: t.Kind, Reread: t.Reread}
}
