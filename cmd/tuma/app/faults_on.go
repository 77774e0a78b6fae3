//go:build faults

package app

// faultsBuild: this binary was built for the drills' own tests (go build -tags faults).
const faultsBuild = true
