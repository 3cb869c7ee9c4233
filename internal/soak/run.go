package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// runProfile runs every mode of the profile (or of -modes), one after the
// other.
func (s *soak) runProfile(ctx context.Context) *result {
	res := &result{profile: s.o.profile, seed: s.o.seed, started: time.Now(), kafka: s.kafkaVersion(ctx),
		machine: machine(), rate: s.o.rate, size: s.o.recordSize, partitions: s.o.partitions}
	modes := s.o.modes
	if len(modes) == 0 {
		modes = profiles[s.o.profile].modes
	}
	for _, name := range modes {
		m, _ := modeByName(name)
		res.modes = append(res.modes, s.runMode(ctx, m))
		if ctx.Err() != nil {
			break
		}
	}
	res.elapsed = time.Since(res.started)
	return res
}

var kafkaJar = regexp.MustCompile(`^kafka-clients-([0-9][0-9A-Za-z.\-]*)\.jar$`)

// kafkaVersion reads the version of the jars kafka.sh runs.
func (s *soak) kafkaVersion(ctx context.Context) string {
	_, cp := s.kafka(ctx, "classpath")
	matches, _ := filepath.Glob(strings.TrimSpace(cp))
	for _, m := range matches {
		if v := kafkaJar.FindStringSubmatch(filepath.Base(m)); v != nil {
			return v[1]
		}
	}
	return "4.x (version not found in " + strings.TrimSpace(cp) + ")"
}
