package dist

import (
	"errors"

	"github.com/stridekit/stridekit/runtime/cuda"
)

// fork runs a reshard's kept box beside the exchange: on a side stream of
// the run's device that starts after the work queued on the run's stream
// and that the run's stream waits for at the end. The kept copy moves up
// to a rank's whole local part at local bandwidth; on the run's stream it
// would add its time to the exchange's.
type fork struct {
	dev    *cuda.Device
	side   *cuda.Stream
	e0, e1 *cuda.Event
}

// forkKeep queues the kept copy on the side stream and returns that
// stream, where it can run beside the exchange: s is a device stream and
// the local views share no byte (in place, the keep must wait for the
// packs). Otherwise it returns nil and queues nothing.
func (r *Reshard) forkKeep(s *cuda.Stream) (*cuda.Stream, error) {
	if s == nil || r.keep == nil || r.src.local.Overlaps(r.dst.local) {
		return nil, nil
	}
	if r.fork == nil || r.fork.dev != s.Device() {
		f, err := newFork(s.Device())
		if err != nil {
			return nil, err
		}
		if r.fork != nil {
			r.fork.close()
		}
		r.fork = f
	}
	f := r.fork
	if err := f.e0.Record(s); err != nil {
		return nil, err
	}
	if err := f.side.WaitEvent(f.e0); err != nil {
		return nil, err
	}
	return f.side, r.keep.Copy(f.side)
}

func newFork(dev *cuda.Device) (*fork, error) {
	f := &fork{dev: dev}
	var err error
	if f.side, err = dev.NewStream(true); err != nil {
		return nil, err
	}
	if f.e0, err = dev.NewEvent(false); err == nil {
		f.e1, err = dev.NewEvent(false)
	}
	if err != nil {
		return nil, errors.Join(err, f.close())
	}
	return f, nil
}

// join makes s wait for the side stream's work.
func (f *fork) join(s *cuda.Stream) error {
	if err := f.e1.Record(f.side); err != nil {
		return err
	}
	return s.WaitEvent(f.e1)
}

func (f *fork) close() error {
	var errs []error
	for _, e := range []*cuda.Event{f.e0, f.e1} {
		if e != nil {
			errs = append(errs, e.Close())
		}
	}
	if f.side != nil {
		errs = append(errs, f.side.Close())
	}
	return errors.Join(errs...)
}
