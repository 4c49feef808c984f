module example.com/downstream

go 1.26.0

require github.com/stridekit/stridekit v0.0.0

require (
	github.com/dave/jennifer v1.7.1 // indirect
	github.com/ebitengine/purego v0.11.3 // indirect
	golang.org/x/sync v0.24.0 // indirect
)

tool github.com/stridekit/stridekit/cmd/stridegen

replace github.com/stridekit/stridekit => ../..
