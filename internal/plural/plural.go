// Package plural writes counts with their noun in the right number for console messages:
// "1 epoch", "2 epochs", "0 batches".
package plural

import "strconv"

// Count is n followed by noun (given in the singular), in the plural unless n is 1. The plural
// adds "s", or is the one in irregular ("batch": "batches").
func Count(n int, noun string) string {
	return strconv.Itoa(n) + " " + Noun(n, noun)
}

// Noun is noun (given in the singular) in the number that n asks for, without the count: for
// messages that write the count themselves ("%d/%d/%d graphs").
func Noun(n int, noun string) string {
	if n == 1 {
		return noun
	}
	if p, ok := irregular[noun]; ok {
		return p
	}
	return noun + "s"
}

// irregular are the plurals of the messages' nouns that are not the singular plus "s".
var irregular = map[string]string{"batch": "batches", "process": "processes", "run directory": "run directories"}
