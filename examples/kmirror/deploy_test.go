package main

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestDeployFiles: the Kubernetes manifest and the systemd unit under
// deploy/ run the runner with flags it accepts, probe /healthz for liveness
// and /readyz for readiness, and give a graceful stop more time than
// -shutdown-timeout.
func TestDeployFiles(t *testing.T) {
	b, err := os.ReadFile("deploy/kubernetes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Spec struct {
			Replicas int
			Template struct {
				Spec struct {
					TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
					Containers                    []struct {
						Args          []string
						LivenessProbe struct {
							HTTPGet struct{ Path string } `yaml:"httpGet"`
						} `yaml:"livenessProbe"`
						ReadinessProbe struct {
							HTTPGet struct{ Path string } `yaml:"httpGet"`
						} `yaml:"readinessProbe"`
					}
				}
			}
		}
	}
	if err := yaml.Unmarshal(b, &d); err != nil {
		t.Fatalf("deploy/kubernetes.yaml: %v", err)
	}
	if d.Spec.Replicas != 3 || len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("replicas %d, containers %d; want 3 and 1", d.Spec.Replicas, len(d.Spec.Template.Spec.Containers))
	}
	c := d.Spec.Template.Spec.Containers[0]
	o, err := parseFlags(c.Args, io.Discard)
	if err != nil {
		t.Fatalf("container args %q: %v", c.Args, err)
	}
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes: liveness %q, readiness %q; want /healthz and /readyz", c.LivenessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Path)
	}
	if grace := time.Duration(d.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second; grace <= o.shutdownTimeout {
		t.Errorf("terminationGracePeriodSeconds %v is not more than -shutdown-timeout %v", grace, o.shutdownTimeout)
	}

	unit, err := os.ReadFile("deploy/kmirror.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(unit), "\n") {
		for _, key := range []string{"ExecStart=", "ExecStartPre="} {
			if rest, ok := strings.CutPrefix(line, key); ok {
				args := strings.Fields(rest)[1:]
				if _, err := parseFlags(args, io.Discard); err != nil {
					t.Errorf("kmirror.service %s%q: %v", key, args, err)
				}
			}
		}
	}
	if !strings.Contains(string(unit), "KillSignal=SIGTERM") || !strings.Contains(string(unit), "TimeoutStopSec=60") {
		t.Errorf("kmirror.service must stop with SIGTERM and allow 60 s")
	}
}
