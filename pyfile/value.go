package pyfile

import (
	"fmt"
	"math/big"

	"github.com/nlpodyssey/gopickle/types"
)

// Items returns the elements of a Python list or tuple.
func Items(v any) ([]any, error) {
	switch t := v.(type) {
	case *types.List:
		return *t, nil
	case *types.Tuple:
		return *t, nil
	}
	return nil, fmt.Errorf("%s, want a list or tuple", TypeName(v))
}

// Field returns the value of a string key of a Python dict or OrderedDict.
func Field(v any, key string) (any, error) {
	switch t := v.(type) {
	case *types.Dict:
		for _, e := range *t {
			if e.Key == key {
				return e.Value, nil
			}
		}
	case *types.OrderedDict:
		if e, ok := t.Map[key]; ok {
			return e.Value, nil
		}
	default:
		return nil, fmt.Errorf("%s, want a dict", TypeName(v))
	}
	return nil, fmt.Errorf("no key %q", key)
}

// Keys lists the string keys of a dict (other keys are skipped).
func Keys(v any) []string {
	var ks []string
	switch t := v.(type) {
	case *types.Dict:
		for _, e := range *t {
			if s, ok := e.Key.(string); ok {
				ks = append(ks, s)
			}
		}
	case *types.OrderedDict:
		for e := t.List.Front(); e != nil; e = e.Next() {
			if s, ok := e.Value.(*types.OrderedDictEntry).Key.(string); ok {
				ks = append(ks, s)
			}
		}
	}
	return ks
}

// AsArray returns v as an array: an *Array, or a Python int, float or bool as a
// 0-dimensional one.
func AsArray(v any) (*Array, error) {
	switch t := v.(type) {
	case *Array:
		return t, nil
	case *tensorRef:
		return t.array()
	case *ndarray:
		if t.a == nil {
			return nil, fmt.Errorf("numpy array without state")
		}
		return t.a, nil
	case int:
		return &Array{DType: DType{Kind: 'i', Size: 8}, Int: []int64{int64(t)}}, nil
	case bool:
		b := int64(0)
		if t {
			b = 1
		}
		return &Array{DType: DType{Kind: 'b', Size: 1}, Int: []int64{b}}, nil
	case float64:
		return &Array{DType: DType{Kind: 'f', Size: 8}, Float: []float64{t}}, nil
	}
	return nil, fmt.Errorf("%s, want an array or a number", TypeName(v))
}

// AsFloat returns a number or a one-element array as a float64.
func AsFloat(v any) (float64, error) {
	a, err := AsArray(v)
	if err != nil {
		return 0, err
	}
	if a.Len() != 1 {
		return 0, fmt.Errorf("array of shape %v, want a single number", a.Shape)
	}
	if a.IsFloat() {
		return a.Float[0], nil
	}
	return float64(a.Int[0]), nil
}

// TypeName describes a value's Python type for error messages.
func TypeName(v any) string {
	switch t := v.(type) {
	case nil:
		return "None"
	case *types.List:
		return fmt.Sprintf("list of %d", len(*t))
	case *types.Tuple:
		return fmt.Sprintf("tuple of %d", len(*t))
	case *types.Dict, *types.OrderedDict:
		return "dict"
	case *Array:
		return fmt.Sprintf("%s array of shape %v", t.DType, t.Shape)
	case *tensorRef:
		return fmt.Sprintf("%s tensor of shape %v", t.st.dtype, t.size)
	case *ndarray:
		if t.a != nil {
			return fmt.Sprintf("%s array of shape %v", t.a.DType, t.a.Shape)
		}
		return "numpy array"
	case *storage:
		return "torch storage"
	case int, *big.Int:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []byte:
		return "bytes"
	case bool:
		return "bool"
	}
	return fmt.Sprintf("%T", v)
}
