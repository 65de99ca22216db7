package cuda

import "testing"

// TestColReduceGeometry checks the row chunking of the column reductions (CPU only).
func TestColReduceGeometry(t *testing.T) {
	for _, c := range []struct {
		rows, d                 int
		tiles, chunks, perChunk int
	}{
		{0, 70, 3, 1, 0},
		{1, 1, 1, 1, 1},
		{100, 17, 1, 1, 100},                   // small: one chunk, no partials or counters
		{2*colMinChunkRows - 1, 70, 3, 1, 127}, // one short of two chunks
		{2 * colMinChunkRows, 70, 3, 2, 64},
		{3000, 70, 3, 46, 66},              // a ZINC batch's nodes
		{9332, 70, 3, 144, 65},             // and its edges
		{1_000_000, 70, 3, 176, 5682},      // GatedGCN edge batch norm: 528 blocks
		{3_000_000, 8, 1, 528, 5682},       // one column tile
		{900_000, 1024, 32, 17, 52942},     // wide
		{100_000, 20_000, 625, 1, 100_000}, // more tiles than the target: no chunking
	} {
		tiles, chunks, per := colReduceGeometry(c.rows, c.d)
		if tiles != c.tiles || chunks != c.chunks || per != c.perChunk {
			t.Errorf("colReduceGeometry(%d, %d) = %d tiles, %d chunks of %d rows; want %d, %d, %d",
				c.rows, c.d, tiles, chunks, per, c.tiles, c.chunks, c.perChunk)
		}
	}
	// Invariants over many shapes: the chunks cover the rows exactly, none is empty, each has
	// at least colMinChunkRows rows, and the grid stays near colTargetBlocks.
	for _, d := range []int{1, 5, 32, 33, 70, 256, 1000} {
		for rows := 1; rows < 5_000_000; rows = rows*3/2 + 1 {
			tiles, chunks, per := colReduceGeometry(rows, d)
			if tiles != (d+colX-1)/colX || chunks < 1 || chunks > colMaxChunks {
				t.Fatalf("rows %d, d %d: %d tiles, %d chunks", rows, d, tiles, chunks)
			}
			if chunks == 1 {
				if per != rows {
					t.Fatalf("rows %d, d %d: one chunk of %d rows", rows, d, per)
				}
				continue
			}
			if per < colMinChunkRows || (chunks-1)*per >= rows || chunks*per < rows {
				t.Fatalf("rows %d, d %d: %d chunks of %d rows do not cover the rows exactly", rows, d, chunks, per)
			}
			if tiles*chunks > colTargetBlocks+tiles {
				t.Fatalf("rows %d, d %d: %d blocks, target %d", rows, d, tiles*chunks, colTargetBlocks)
			}
		}
	}
}
