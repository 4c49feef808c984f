package downstream

import "github.com/stridekit/stridekit/layout"

var kernelSig = layout.Signature{Class: layout.ClassTile, NDim: 2, Itemsize: 4, Vec: 4}
