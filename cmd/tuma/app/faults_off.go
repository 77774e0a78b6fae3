//go:build !faults

package app

// faultsBuild: this binary refuses TUMA_FAULTS.
const faultsBuild = false
