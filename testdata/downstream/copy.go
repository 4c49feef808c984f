// Package downstream is an example module that generates its own stridekit
// kernels with go generate: the float32 transposes and 4-d float16
// permutations it knows ahead of time.
package downstream

//go:generate go tool stridegen -sig tile:nd=2,fast=0,item=4,vec=4 -sig tile:nd=4,fast=1,item=2,vec=8 -sig elem:nd=7,item=4 -o copy_kernels.go

import "github.com/stridekit/stridekit/kernels/jit"

// Registered reports whether this package's kernels are in the runtime's
// registry (they are, from the generated init).
func Registered() bool {
	_, ok := jit.Lookup(kernelSig)
	return ok
}
