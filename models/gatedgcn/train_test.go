package gatedgcn

import (
	"github.com/rewiregnn/rewiregnn/nn"
	"testing"

	"github.com/rewiregnn/rewiregnn/internal/testgraphs"
)

// TestTrainZINC trains the 100K ZINC network on 96 real test molecules in batches of 16 for a
// few hundred Adam steps (fewer with -short) and checks that the L1 loss falls.
func TestTrainZINC(t *testing.T) {
	steps := 200
	if testing.Short() {
		steps = 80
	}
	testgraphs.TrainFalls(t, nn.BuildOf(ZINC(), Build), testgraphs.ZINC(t, 96), 16, steps, 0.6)
}
