module github.com/stridekit/stridekit

go 1.26.0

require (
	github.com/dave/jennifer v1.7.1
	github.com/ebitengine/purego v0.11.3
	github.com/schollz/progressbar/v3 v3.19.1
	golang.org/x/sync v0.24.0
	golang.org/x/term v0.44.0
	pgregory.net/rapid v1.3.0
)

require (
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	golang.org/x/sys v0.46.0 // indirect
)
