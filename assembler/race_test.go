//go:build race

package assembler

const raceEnabled = true
