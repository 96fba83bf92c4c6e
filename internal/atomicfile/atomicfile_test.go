package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteCreatesFoldersAndReplaces(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a", "b", "out.txt")
	require.NoError(t, Write(p, []byte("one")))
	require.NoError(t, Write(p, []byte("two")))
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "two", string(got))
}

func TestFailedWriteLeavesOldFileAndNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	require.NoError(t, Write(p, []byte("complete")))
	boom := errors.New("interrupted")
	err := WriteFunc(p, func(w io.Writer) error {
		_, _ = w.Write([]byte("half"))
		return boom
	})
	require.ErrorIs(t, err, boom)
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "complete", string(got))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "the temporary file must be removed")
}

// A private file gets its mode before it appears under its name, and an
// ordinary output stays readable by others.
func TestWriteFuncModeSetsTheModeBeforeTheRename(t *testing.T) {
	dir := t.TempDir()
	private := filepath.Join(dir, "snapshot")
	require.NoError(t, WriteFuncMode(private, 0o600, func(w io.Writer) error {
		_, err := w.Write([]byte("secret"))
		return err
	}))
	st, err := os.Stat(private)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	public := filepath.Join(dir, "summary.json")
	require.NoError(t, Write(public, []byte("{}")))
	st, err = os.Stat(public)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), st.Mode().Perm())
}
