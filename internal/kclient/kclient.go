// Package kclient creates franz-go clients one at a time.
//
// kgo.NewClient and kgo.ValidateOpts validate a client's options, and the
// validation of kgo.ProducerBatchCompression reorders the option's codec
// slice in place (kgo.DefaultCompressor removes duplicates). kmirror builds
// many clients from the same options (a consumer and a producer per slot,
// the singleton duties' clients, readers), often at the same moment, so
// those writes would race. Client creation does no I/O (kgo connects
// lazily), so serializing it costs nothing measurable.
package kclient

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

var mu sync.Mutex

// New is kgo.NewClient, serialized with every other call of this package.
func New(opts ...kgo.Opt) (*kgo.Client, error) {
	mu.Lock()
	defer mu.Unlock()
	return kgo.NewClient(opts...)
}

// Validate is kgo.ValidateOpts, serialized like New.
func Validate(opts ...kgo.Opt) error {
	mu.Lock()
	defer mu.Unlock()
	return kgo.ValidateOpts(opts...)
}

// OptValue is cl.OptValue(opt), serialized like New: an option's value may
// be a slice New reorders.
func OptValue(cl *kgo.Client, opt any) any {
	mu.Lock()
	defer mu.Unlock()
	return cl.OptValue(opt)
}

// Locked runs f serialized with New (f reads option values that New may
// reorder).
func Locked(f func()) {
	mu.Lock()
	defer mu.Unlock()
	f()
}
