package main

import (
	"strings"
	"testing"
)

func TestCompressionCodec(t *testing.T) {
	for _, name := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		opt, err := compressionCodec(name)
		if err != nil || opt == nil {
			t.Errorf("compressionCodec(%q) = %v, %v; want an option", name, opt, err)
		}
	}
	if opt, err := compressionCodec("default"); err != nil || opt != nil {
		t.Errorf("compressionCodec(default) = %v, %v; want no option (franz-go's default)", opt, err)
	}
	if _, err := compressionCodec("brotli"); err == nil || !strings.Contains(err.Error(), `-compression "brotli"`) {
		t.Errorf("compressionCodec(brotli) error %v", err)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-topics", "a"},
		{"-topics", "a", "-prefix", "p", "-compression", "brotli"},
	} {
		if code := run(args); code != 2 {
			t.Errorf("run(%q) = %d, want 2", args, code)
		}
	}
}
