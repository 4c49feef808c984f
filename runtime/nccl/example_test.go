package nccl_test

import (
	"context"
	"log"
	"time"

	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/dist"
	"github.com/stridekit/stridekit/runtime/nccl"
)

// Example is one rank of a job started with one process per GPU, e.g.
// torchrun --nproc-per-node=2 (which sets RANK, WORLD_SIZE and
// LOCAL_RANK) with STRIDEKIT_NCCL_ID_ADDR=localhost:29600 or
// STRIDEKIT_NCCL_ID_FILE=/shared/job-42.id: it hands the unique id out,
// joins the communicator and sends every rank a MiB.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := nccl.ConfigFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	id, err := nccl.Bootstrap(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	dev, err := cuda.GetDevice(cfg.Device)
	if err != nil {
		log.Fatal(err)
	}
	c, err := nccl.NewComm(ctx, dev, cfg.Size, cfg.Rank, id)
	if err != nil {
		log.Fatal(err) // a rank that never came: an error matching nccl.ErrTimeout
	}
	defer c.Close()
	s, err := dev.NewStream(true)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	const n = 1 << 20 // bytes for each rank
	send, err := c.Alloc(int64(n*c.Size()), s)
	if err != nil {
		log.Fatal(err)
	}
	defer send.Close()
	recv, err := c.Alloc(int64(n*c.Size()), s)
	if err != nil {
		log.Fatal(err)
	}
	defer recv.Close()
	segs := make([]dist.Segment, c.Size())
	for q := range segs {
		segs[q] = dist.Segment{Off: int64(q * n), Len: n}
	}
	// (fill send on s here)
	if err := c.AllToAll(ctx, send, recv, segs, segs, s); err != nil {
		log.Fatal(err)
	}
	if err := c.WaitStream(ctx, s); err != nil {
		log.Fatal(err) // a peer that died: a timeout or NCCL's error, not a hang
	}
	log.Printf("rank %d of %d: exchanged %d bytes", c.Rank(), c.Size(), n*c.Size())
}
