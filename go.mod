module github.com/stridekit/stridekit

go 1.26.8

require (
	github.com/dave/jennifer v1.7.1
	github.com/ebitengine/purego v0.11.3
	golang.org/x/sync v0.24.0
	pgregory.net/rapid v1.3.0
)
