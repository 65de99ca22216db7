package train

import (
	"fmt"
	"io"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/prep"
)

// Evaluation in large batches (docs/protocol.md §"Losses and metrics", docs/gpu.md). The
// protocol's evaluation metrics are per batch of train.batch_size graphs, cut from the split in
// order; in evaluation mode a graph's (or node's) prediction does not depend on the batch it is
// computed in (gpu/evalbatch_test.go). So a GPU run computes the predictions of several
// consecutive protocol batches in one large batch (one device run instead of several, each of
// which is mostly launch overhead at the training batch size), cuts them back into the protocol
// batches and forms each one's loss on the host from its rows (nn.Inputs.BatchLoss, the kernel
// the net's loss op runs) and its metric as before (Meter.Add). The CPU evaluates batch by batch:
// it has no launches to save, and a larger net only grows its activation arena.

// DefaultEvalBatch is the graphs a GPU run's large evaluation batch holds at most (Options.EvalBatch
// 0; cmd/train -eval-batch), rounded down to a whole number of protocol batches: 8 batches of 128
// ZINC graphs, a whole validation split of ZINC in one device run. The device's free memory can
// make it smaller (largeEval.plan).
const DefaultEvalBatch = 1024

// largeEvaler is a trainer that evaluates a batch (the protocol's path) and computes the
// predictions of a large batch in a bucket of its own: nn.Trainer and gpu.Trainer.
type largeEvaler interface {
	Eval(bt *data.Batch) (float64, []float64, error)
	EvalRows(bt *data.Batch, b nn.Bucket) ([]float64, *nn.Inputs, error)
}

// largeEval is how a run evaluates in large batches: per protocol batches at a time, in one
// bucket that every such group of the run's splits fits; per 0 is batch by batch.
type largeEval struct {
	planned bool
	per     int
	bucket  nn.Bucket
	cache   map[string][]*data.Batch // the large batches of the fixed splits (val, test)
}

// groupBucket is the smallest bucket that holds every group of per consecutive protocol batches
// of bs graphs in each split (graph sizes in order), counting only groups of at least two
// protocol batches (a lone batch is evaluated on its own); ok is false where there are none.
func groupBucket(splits [][]prep.GraphSize, bs, per int) (b nn.Bucket, ok bool) {
	if per < 2 || bs < 1 {
		return b, false
	}
	for _, gs := range splits {
		for lo := 0; lo < len(gs); lo += bs * per {
			hi := min(lo+bs*per, len(gs))
			if hi-lo <= bs {
				continue
			}
			n, e := 0, 0
			for _, g := range gs[lo:hi] {
				n, e = n+g.N, e+g.E
			}
			b = nn.Bucket{Nodes: max(b.Nodes, n), Edges: max(b.Edges, e), Graphs: max(b.Graphs, hi-lo)}
			ok = true
		}
	}
	return b, ok
}

// evalBatchFor is the protocol batches per large batch that evalBatch graphs allow at batch size bs
// (evalBatch 0: DefaultEvalBatch); below 2, batch by batch (0).
func evalBatchFor(evalBatch, bs int) int {
	if evalBatch == 0 {
		evalBatch = DefaultEvalBatch
	}
	per := evalBatch / max(bs, 1)
	if per < 2 {
		return 0
	}
	return per
}

// planLargeEval sets how a GPU run evaluates, once, before its first evaluation (pickLarge with
// the device's room, gpu.Trainer.EvalRoom); the CPU evaluates batch by batch.
func (r *run) planLargeEval() error {
	le := &r.large
	if le.planned {
		return nil
	}
	le.planned = true
	if r.gpu == nil {
		return nil
	}
	splits := [][]prep.GraphSize{r.sizes[1], r.sizes[2], r.sizes[0]}
	per, b, err := pickLarge(splits, r.cfg.Train.BatchSize, r.o.EvalBatch, r.gpu.EvalRoom, r.log)
	if err != nil {
		return fmt.Errorf("evaluation in large batches: %w", err)
	}
	le.per, le.bucket = per, b
	return nil
}

// roomFunc says whether the evaluation net of a bucket fits the device (gpu.Trainer.EvalRoom).
type roomFunc func(b nn.Bucket) (fits bool, need, room int64, known bool, err error)

// pickLarge chooses the protocol batches per large evaluation batch and its bucket: as many as
// evalBatch graphs allow (evalBatchFor), halved until room says the bucket of their groups
// (groupBucket) fits; per 0 where none does (or evalBatch allows fewer than two). It says on log
// what it chose and what it tried.
func pickLarge(splits [][]prep.GraphSize, bs, evalBatch int, room roomFunc, log io.Writer) (per int, b nn.Bucket, err error) {
	for per = evalBatchFor(evalBatch, bs); per >= 2; per /= 2 {
		b, ok := groupBucket(splits, bs, per)
		if !ok {
			continue
		}
		fits, need, free, known, err := room(b)
		if err != nil {
			return 0, nn.Bucket{}, err
		}
		if !fits {
			fmt.Fprintf(log, "evaluation: %d protocol batches of %d graphs in one batch (bucket %v) would need %.0f MiB more device memory, %.0f MiB are free; trying half\n",
				per, bs, b, mib(need), mib(free))
			continue
		}
		note := ""
		if known {
			note = fmt.Sprintf(", %.0f MiB more device memory of %.0f MiB free", mib(need), mib(free))
		}
		fmt.Fprintf(log, "evaluation: up to %d protocol batches of %d graphs computed in one batch (bucket %v%s), the metrics formed per protocol batch\n",
			per, bs, b, note)
		return per, b, nil
	}
	return 0, nn.Bucket{}, nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// evaluateSplit evaluates split gs, cut into the protocol batches bs (batches(gs, batch size)):
// in large batches where the run plans them (planLargeEval), else batch by batch. name keys the
// large batches kept for the next epoch ("" builds them afresh and keeps nothing).
func (r *run) evaluateSplit(name string, gs []*data.Graph, bs []*data.Batch) (*Meter, error) {
	if err := r.planLargeEval(); err != nil {
		return nil, err
	}
	le := &r.large
	ev, ok := r.step.(largeEvaler)
	if le.per < 2 || !ok || len(bs) < 2 {
		return r.evaluate(bs)
	}
	large := le.cache[name]
	if large == nil {
		var err error
		if large, err = batches(gs, r.cfg.Train.BatchSize*le.per); err != nil {
			return nil, err
		}
		if name != "" {
			if le.cache == nil {
				le.cache = map[string][]*data.Batch{}
			}
			le.cache[name] = large
		}
	}
	m := NewMeter(r.metric, r.io.Out)
	if err := evalLarge(ev, m, bs, large, le.per, le.bucket); err != nil {
		return nil, err
	}
	return m, nil
}

// evalLarge adds the protocol batches bs to m as Meter.Add(loss, pred, bt) would add them from
// Eval(bt) one by one, computing their predictions per at a time in large[j], the union of the
// graphs of bs[j·per : (j+1)·per], in bucket b; a group of one protocol batch (a short last group)
// goes through Eval. Each protocol batch's loss is formed on the host from its rows
// (nn.Inputs.BatchLoss).
func evalLarge(ev largeEvaler, m *Meter, bs, large []*data.Batch, per int, b nn.Bucket) error {
	if want := (len(bs) + per - 1) / per; len(large) != want {
		return fmt.Errorf("evaluation: %d large batches for %d protocol batches, %d at a time; want %d", len(large), len(bs), per, want)
	}
	for j, lb := range large {
		group := bs[j*per : min((j+1)*per, len(bs))]
		if len(group) == 1 {
			loss, pred, err := ev.Eval(group[0])
			if err != nil {
				return err
			}
			m.Add(loss, pred, group[0])
			continue
		}
		graphs, nodes := 0, 0
		for _, bt := range group {
			graphs, nodes = graphs+bt.NumGraphs, nodes+bt.Union.N
		}
		if graphs != lb.NumGraphs || nodes != lb.Union.N {
			return fmt.Errorf("evaluation: large batch %d holds %d graphs and %d nodes, its protocol batches %d and %d", j, lb.NumGraphs, lb.Union.N, graphs, nodes)
		}
		pred, in, err := ev.EvalRows(lb, b)
		if err != nil {
			return fmt.Errorf("evaluation, large batch %d of %d: %w", j, len(large), err)
		}
		rows := lb.NumGraphs
		if in.NodeLevel {
			rows = lb.Union.N
		}
		if rows == 0 || len(pred)%rows != 0 {
			return fmt.Errorf("evaluation, large batch %d: %d predictions for %d rows", j, len(pred), rows)
		}
		cols, off := len(pred)/rows, 0
		for _, bt := range group {
			n := bt.NumGraphs
			if in.NodeLevel {
				n = bt.Union.N
			}
			p := pred[off*cols : (off+n)*cols]
			off += n
			loss, err := in.BatchLoss(bt, p)
			if err != nil {
				return fmt.Errorf("evaluation, large batch %d: %w", j, err)
			}
			m.Add(loss, p, bt)
		}
	}
	return nil
}

// LargeEvaluator is what EvaluateLarge evaluates through: nn.Trainer or gpu.Trainer.
type LargeEvaluator = largeEvaler

// EvaluateBatches is the protocol's evaluation of a split cut into the batches bs: each batch
// evaluated on its own (Eval), the loss and metric (runfiles.Metric*, over classes: the model's
// output width) accumulated in a Meter, as a run evaluates on the CPU.
func EvaluateBatches(ev LargeEvaluator, metric string, classes int, bs []*data.Batch) (*Meter, error) {
	m := NewMeter(metric, classes)
	for _, bt := range bs {
		loss, pred, err := ev.Eval(bt)
		if err != nil {
			return nil, err
		}
		m.Add(loss, pred, bt)
	}
	return m, nil
}

// EvaluateLarge is EvaluateBatches over the protocol batches of batchSize graphs of gs, with the
// predictions computed per protocol batches at a time in large batches of one bucket (as a GPU
// run evaluates; per below 2 is EvaluateBatches). It returns the meter and the number of large
// batches run. For measurements (cmd/gpubench -eval); a run plans its own (planLargeEval).
func EvaluateLarge(ev LargeEvaluator, metric string, classes int, gs []*data.Graph, batchSize, per int) (*Meter, int, error) {
	bs, err := batches(gs, batchSize)
	if err != nil {
		return nil, 0, err
	}
	b, ok := groupBucket([][]prep.GraphSize{sizesOf(gs)}, batchSize, per)
	if !ok {
		m, err := EvaluateBatches(ev, metric, classes, bs)
		return m, 0, err
	}
	large, err := batches(gs, batchSize*per)
	if err != nil {
		return nil, 0, err
	}
	m := NewMeter(metric, classes)
	if err := evalLarge(ev, m, bs, large, per, b); err != nil {
		return nil, 0, err
	}
	return m, len(large), nil
}

// Batches cuts gs in order into batches of size graphs (the last may be short): the protocol's
// evaluation batches.
func Batches(gs []*data.Graph, size int) ([]*data.Batch, error) { return batches(gs, size) }
