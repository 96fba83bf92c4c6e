package deepcopy

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"unsafe"
)

// Options are the copy's knobs.
type Options struct {
	// DropFuncs leaves every non-nil function nil in the copy instead of
	// refusing it: for state whose closures are caches rebuilt on demand.
	DropFuncs bool
	// Replace maps pointers the copy does not follow to what they become
	// in the copy (a pointer of the same type): for a graph that hangs off
	// an object the caller copies itself. Nothing else in the graph may
	// point into a replaced object or into what it refers to: the copy
	// would not alias it.
	Replace map[any]any
}

// Copy returns a deep copy of the graph reachable from p.
func Copy[T any](p *T, opt Options) (*T, error) {
	if p == nil {
		return nil, nil
	}
	c := &copier{opt: opt, seen: map[seenKey]bool{}, maps: map[uintptr]reflect.Value{}, types: map[reflect.Type]*typeInfo{}}
	for old, new := range opt.Replace {
		o, n := reflect.ValueOf(old), reflect.ValueOf(new)
		if o.Kind() != reflect.Pointer || o.IsNil() || n.Type() != o.Type() {
			return nil, fmt.Errorf("deepcopy: Replace: %T by %T: need two pointers of one type, the first not nil", old, new)
		}
		if c.replace == nil {
			c.replace = map[seenKey]reflect.Value{}
		}
		c.replace[seenKey{o.Pointer(), o.Type().Elem()}] = n
	}
	root := reflect.ValueOf(p)
	if err := c.walk(root, c.info(root.Type())); err != nil {
		return nil, err
	}
	if err := c.merge(); err != nil {
		return nil, err
	}
	for i := range c.groups {
		g := &c.groups[i]
		src := reflect.NewAt(g.typ, g.old).Elem()
		dst := reflect.NewAt(g.typ, g.base).Elem()
		c.copyInto(dst, src, c.info(g.typ))
	}
	out := reflect.New(root.Type()).Elem()
	c.copyInto(out, root, c.info(root.Type()))
	return out.Interface().(*T), nil
}

// region is memory a pointer or a slice refers to.
type region struct {
	ptr        unsafe.Pointer // the old object (addr, as a pointer)
	addr, size uintptr
	typ        reflect.Type // the object there: T for a *T, [cap]E for a slice
	elem       reflect.Type // E for a slice (or a pointer to one element), else nil
}

// group is a merged region: one object of the copy.
type group struct {
	old        unsafe.Pointer
	addr, size uintptr
	typ        reflect.Type
	base       unsafe.Pointer // the new object
}

type seenKey struct {
	addr uintptr
	typ  reflect.Type
}

type copier struct {
	opt     Options
	regions []region
	groups  []group
	seen    map[seenKey]bool
	maps    map[uintptr]reflect.Value // old map → its copy (pass 2), or a mark (pass 1)
	types   map[reflect.Type]*typeInfo
	replace map[seenKey]reflect.Value // Options.Replace by the old pointer
	// building counts the info calls under way and built the infos they
	// made: published to plans once the outermost call returns, when every
	// one of them is complete.
	building int
	built    []*typeInfo
}

// plans holds every type's copy plan (*typeInfo, immutable once complete)
// for the life of the process: a fork copies the same few types hundreds
// of times, and finding a plan is a walk over the type's fields.
var plans sync.Map // reflect.Type → *typeInfo

// typeInfo is what the copy needs to know of a type, found once per type:
// whether its values hold references that need copying (pointers, slices,
// maps, interfaces, functions, channels), and, for the kinds that contain
// values, the contained types' infos (a struct's: only the fields that
// hold references).
type typeInfo struct {
	t      reflect.Type
	kind   reflect.Kind
	deep   bool
	elem   *typeInfo // pointer, slice, array, map value
	key    *typeInfo // map key
	fields []fieldInfo
}

type fieldInfo struct {
	index int
	info  *typeInfo
}

func (c *copier) info(t reflect.Type) *typeInfo {
	if ti, ok := c.types[t]; ok {
		return ti
	}
	if ti, ok := plans.Load(t); ok {
		c.types[t] = ti.(*typeInfo)
		return ti.(*typeInfo)
	}
	ti := &typeInfo{t: t, kind: t.Kind()}
	c.types[t] = ti // before the contents: a recursive type refers to itself
	c.building++
	c.built = append(c.built, ti)
	defer func() {
		if c.building--; c.building == 0 {
			for _, b := range c.built {
				plans.LoadOrStore(b.t, b)
			}
			c.built = c.built[:0]
		}
	}()
	switch ti.kind {
	case reflect.Pointer, reflect.Slice:
		ti.deep = true
		ti.elem = c.info(t.Elem())
	case reflect.Map:
		ti.deep = true
		ti.key, ti.elem = c.info(t.Key()), c.info(t.Elem())
	case reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer:
		ti.deep = true
	case reflect.Array:
		// An array or a struct contains its elements or fields directly:
		// no cycle can pass through it without a pointer, slice or map.
		ti.elem = c.info(t.Elem())
		ti.deep = t.Len() > 0 && ti.elem.deep
	case reflect.Struct:
		for i := range t.NumField() {
			if fi := c.info(t.Field(i).Type); fi.deep {
				ti.fields = append(ti.fields, fieldInfo{i, fi})
			}
		}
		ti.deep = len(ti.fields) > 0
	}
	return ti
}

// open makes v readable and, if addressable, writable even where it was
// reached through an unexported field.
func open(v reflect.Value) reflect.Value {
	if v.CanAddr() && !v.CanInterface() {
		return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	}
	return v
}

// walk is the first pass.
func (c *copier) walk(v reflect.Value, ti *typeInfo) error {
	if !ti.deep {
		return nil
	}
	t := ti.t
	switch ti.kind {
	case reflect.Pointer:
		if v.IsNil() || t.Elem().Size() == 0 {
			return nil
		}
		addr := v.Pointer()
		et := t.Elem()
		if _, ok := c.replace[seenKey{addr, et}]; ok {
			return nil
		}
		c.regions = append(c.regions, region{ptr: v.UnsafePointer(), addr: addr, size: et.Size(), typ: et})
		if k := (seenKey{addr, et}); !c.seen[k] {
			c.seen[k] = true
			return c.walk(v.Elem(), ti.elem)
		}
	case reflect.Slice:
		if v.IsNil() || v.Cap() == 0 || t.Elem().Size() == 0 {
			return nil
		}
		et := t.Elem()
		at := reflect.ArrayOf(v.Cap(), et)
		addr := v.Pointer()
		c.regions = append(c.regions, region{ptr: v.UnsafePointer(), addr: addr, size: at.Size(), typ: at, elem: et})
		if k := (seenKey{addr, at}); !c.seen[k] && ti.elem.deep {
			c.seen[k] = true
			full := v.Slice3(0, v.Cap(), v.Cap())
			for i := range full.Len() {
				if err := c.walk(full.Index(i), ti.elem); err != nil {
					return err
				}
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			if err := c.walk(v.Index(i), ti.elem); err != nil {
				return err
			}
		}
	case reflect.Struct:
		for _, f := range ti.fields {
			if err := c.walk(v.Field(f.index), f.info); err != nil {
				return fmt.Errorf("%s.%s: %w", t, t.Field(f.index).Name, err)
			}
		}
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		if _, ok := c.maps[v.Pointer()]; ok {
			return nil
		}
		c.maps[v.Pointer()] = reflect.Value{}
		it := v.MapRange()
		for it.Next() {
			if err := c.walk(it.Key(), ti.key); err != nil {
				return err
			}
			if err := c.walk(it.Value(), ti.elem); err != nil {
				return err
			}
		}
	case reflect.Interface:
		if !v.IsNil() {
			e := v.Elem()
			return c.walk(e, c.info(e.Type()))
		}
	case reflect.Func:
		if !v.IsNil() && !c.opt.DropFuncs {
			return fmt.Errorf("a function of type %s: a closure would alias the original (Options.DropFuncs)", t)
		}
	case reflect.Chan, reflect.UnsafePointer:
		if !v.IsNil() {
			return fmt.Errorf("a %s: cannot be copied", t)
		}
	}
	return nil
}

// merge turns the regions into groups, allocating each group's object.
func (c *copier) merge() error {
	rs := c.regions
	slices.SortFunc(rs, func(a, b region) int {
		if a.addr != b.addr {
			if a.addr < b.addr {
				return -1
			}
			return 1
		}
		// Larger first, so that the containing object comes first.
		if a.size != b.size {
			if a.size > b.size {
				return -1
			}
			return 1
		}
		return 0
	})
	for i := 0; i < len(rs); {
		start, end := rs[i].addr, rs[i].addr+rs[i].size
		j := i + 1
		for j < len(rs) && rs[j].addr < end {
			end = max(end, rs[j].addr+rs[j].size)
			j++
		}
		members := rs[i:j]
		var typ reflect.Type
		for _, r := range members {
			if r.addr == start && r.size == end-start {
				typ = r.typ
				break
			}
		}
		if typ == nil {
			// Slices of one array that overlap without one containing the
			// others: an array over their union.
			var et reflect.Type
			for _, r := range members {
				e := r.elem
				if e == nil {
					e = r.typ
				}
				if et == nil {
					et = e
				}
				if e != et || (r.addr-start)%et.Size() != 0 {
					return errors.New("deepcopy: objects overlap in memory in a way the copy cannot reproduce")
				}
			}
			typ = reflect.ArrayOf(int((end-start)/et.Size()), et)
		}
		c.groups = append(c.groups, group{old: rs[i].ptr, addr: start, size: end - start, typ: typ, base: reflect.New(typ).UnsafePointer()})
		i = j
	}
	return nil
}

// mapAddr is where the object at old address a is in the copy.
func (c *copier) mapAddr(a uintptr) unsafe.Pointer {
	i, _ := slices.BinarySearchFunc(c.groups, a, func(g group, a uintptr) int {
		switch {
		case g.addr+g.size <= a:
			return -1
		case g.addr > a:
			return 1
		}
		return 0
	})
	g := &c.groups[i] // every address was recorded in the first pass
	return unsafe.Add(g.base, a-g.addr)
}

// copyInto is the second pass: dst (settable, zero) gets a copy of src.
func (c *copier) copyInto(dst, src reflect.Value, ti *typeInfo) {
	t := ti.t
	if !src.CanAddr() && (ti.kind == reflect.Struct || ti.kind == reflect.Array) {
		// Unexported fields of a value that is not addressable (a map key,
		// an interface's contents) are read through an addressable copy.
		tmp := reflect.New(t).Elem()
		tmp.Set(src)
		src = tmp
	}
	if !ti.deep {
		dst.Set(src)
		return
	}
	switch ti.kind {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		if t.Elem().Size() == 0 {
			dst.Set(reflect.New(t.Elem()))
			return
		}
		if r, ok := c.replace[seenKey{src.Pointer(), t.Elem()}]; ok {
			dst.Set(r)
			return
		}
		dst.Set(reflect.NewAt(t.Elem(), c.mapAddr(src.Pointer())))
	case reflect.Slice:
		switch {
		case src.IsNil():
			dst.SetZero()
		case src.Cap() == 0 || t.Elem().Size() == 0:
			dst.Set(reflect.MakeSlice(t, src.Len(), src.Cap()))
		default:
			s := reflect.SliceAt(t.Elem(), c.mapAddr(src.Pointer()), src.Cap()).Slice(0, src.Len())
			dst.Set(s.Convert(t))
		}
	case reflect.Array:
		for i := range src.Len() {
			c.copyInto(dst.Index(i), src.Index(i), ti.elem)
		}
	case reflect.Struct:
		// The whole struct at once, then the fields that hold references
		// over it.
		dst.Set(src)
		for _, f := range ti.fields {
			c.copyInto(open(dst.Field(f.index)), open(src.Field(f.index)), f.info)
		}
	case reflect.Map:
		if src.IsNil() {
			dst.SetZero()
			return
		}
		if m, ok := c.maps[src.Pointer()]; ok && m.IsValid() {
			dst.Set(m)
			return
		}
		m := reflect.MakeMapWithSize(t, src.Len())
		c.maps[src.Pointer()] = m
		it := src.MapRange()
		for it.Next() {
			k := reflect.New(t.Key()).Elem()
			c.copyInto(k, it.Key(), ti.key)
			v := reflect.New(t.Elem()).Elem()
			c.copyInto(v, it.Value(), ti.elem)
			m.SetMapIndex(k, v)
		}
		dst.Set(m)
	case reflect.Interface:
		if src.IsNil() {
			dst.SetZero()
			return
		}
		e := src.Elem()
		v := reflect.New(e.Type()).Elem()
		c.copyInto(v, e, c.info(e.Type()))
		dst.Set(v)
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		// nil (the first pass refused the rest, or DropFuncs drops them)
		dst.SetZero()
	}
}
