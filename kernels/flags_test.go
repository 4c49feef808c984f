package kernels

import "flag"

var updateSigs = flag.Bool("update-sigs", false, "rewrite default.sigs from gen.DefaultSet")
