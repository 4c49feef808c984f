package downstream

import "testing"

func TestRegistered(t *testing.T) {
	if !Registered() {
		t.Fatal("generated kernels are not registered")
	}
}
