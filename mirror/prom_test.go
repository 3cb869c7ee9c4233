package mirror_test

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kmirror/kmirror/mirror"
	"github.com/kmirror/kmirror/mirror/mirrorprom"
)

func init() {
	mirror.SetPromMetrics(func() mirror.Metrics { return mirrorprom.New(prometheus.NewRegistry()) })
}
