// fakegpu's pod sandbox ("pause") process. Upstream's pause is C; this is the same behaviour in Go so
// the whole cluster builds from the Go toolchain alone.
module fakegpu.dev/cluster/pause

go 1.26.0
