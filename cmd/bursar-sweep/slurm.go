package main

import (
	"fmt"
	"github.com/bursar-hpc/bursar/internal/slurmjob"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"
)

// studyNames are the commands a cluster job can split: every registered
// study.
func studyNames() []string {
	var names []string
	for _, s := range studies() {
		names = append(names, s.Name)
	}
	return names
}

// commandOut is the folder a study writes into without --out (as its
// own default says), given its flags as written: "" for sweep (and for a
// command that is not a study), results/<command>-custom-<digest>
// (customOut) for a trace study given another trace, window, pool or
// config.
func commandOut(command string, args []string) string {
	if s := findStudy(command); s != nil {
		return s.out(args)
	}
	return ""
}

// parseClusterJob reads `<command> <flags>` as given after slurm-script's
// own flags.
func parseClusterJob(c *cli.Context) (*slurmjob.Job, error) {
	if c.NArg() == 0 {
		return nil, fmt.Errorf("%s needs the sweep command to split, e.g. `%s --shards 3 paper --quick`", c.Command.Name, c.Command.Name)
	}
	job := &slurmjob.Job{Command: c.Args().First(), Shards: c.Int("shards")}
	if findStudy(job.Command) == nil {
		return nil, fmt.Errorf("%q is not a sweep command (want one of %s)", job.Command, strings.Join(studyNames(), ", "))
	}
	if job.Shards < 1 {
		return nil, fmt.Errorf("--shards must be at least 1, got %d", job.Shards)
	}
	var err error
	if job.Args, job.Out, err = slurmjob.SplitArgs(c.Command.Name, c.Args().Tail()); err != nil {
		return nil, err
	}
	if job.Out == "" {
		if job.Out = commandOut(job.Command, job.Args); job.Out == "" {
			return nil, fmt.Errorf("give the sweep an --out folder: the shards and the merge must agree on it")
		}
	}
	job.Name = c.String("job-name")
	if job.Name == "" {
		job.Name = "bursar-" + job.Command
	}
	return job, nil
}

func slurmScriptCommand() *cli.Command {
	return &cli.Command{
		Name:      "slurm-script",
		Usage:     "print a Slurm job-array script (or, with --k8s, a Kubernetes Indexed Job) that runs a sweep sharded",
		ArgsUsage: "COMMAND [FLAGS…]",
		Description: "Prints a batch script that runs a study (below) with its flags as a job array of\n" +
			"--shards tasks, task I running --shard I/N, and submits from task 0 a merge job that waits for the whole array\n" +
			"(afterok) and writes the outputs into the command's --out. Every node must see the\n" +
			"binary and --out (a shared filesystem). docs/cluster.md says how it was tested.\n\n" +
			"With --k8s it prints instead a Kubernetes Indexed Job (one pod per shard, index from\n" +
			"$JOB_COMPLETION_INDEX) and the merge Job to apply after it, both on one volume claim.\n\n" +
			"Studies: " + strings.Join(studyNames(), ", ") + ".\n\n" +
			"Examples:\n" +
			"   bursar-sweep slurm-script --shards 8 --time 1:00:00 paper --nseeds 30 --out $PWD/paper > paper.sbatch\n" +
			"   sbatch paper.sbatch\n" +
			"   bursar-sweep slurm-script --k8s --image registry.example/bursar:1 --shards 8 paper > paper-job.yaml",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "shards", Usage: "split the sweep into `N` shards (array tasks or pods)", Value: 4},
			&cli.StringFlag{Name: "binary", Usage: "the bursar-sweep `PATH` on the nodes (in the image with --k8s)", DefaultText: "this binary's absolute path; bursar-sweep with --k8s"},
			&cli.StringFlag{Name: "job-name", Usage: "the job's `NAME`", DefaultText: "bursar-COMMAND"},
			&cli.StringFlag{Name: "workdir", Usage: "the jobs' working `FOLDER` (relative --out and logs are in it)", DefaultText: "the current folder"},
			&cli.StringFlag{Name: "partition", Usage: "Slurm `PARTITION`", DefaultText: "the cluster's default"},
			&cli.StringFlag{Name: "time", Usage: "Slurm time limit per task, `LIMIT` such as 30:00", DefaultText: "the partition's"},
			&cli.IntFlag{Name: "cpus-per-task", Usage: "`N` CPUs per array task (the shard's --workers)", Value: 1},
			&cli.StringFlag{Name: "account", Usage: "Slurm `ACCOUNT` to charge (array and merge job)", DefaultText: "your default account"},
			&cli.StringFlag{Name: "qos", Usage: "Slurm `QOS` (array and merge job)", DefaultText: "the account's default"},
			&cli.StringFlag{Name: "mem", Usage: "memory per array task, `SIZE` such as 4G (sbatch --mem)", DefaultText: "the partition's"},
			&cli.StringSliceFlag{Name: "sbatch", Usage: "a further sbatch `OPTION` for the array, as --sbatch=--constraint=a100 (repeatable)", DefaultText: "none"},
			&cli.BoolFlag{Name: "k8s", Usage: "print a Kubernetes Indexed Job manifest instead"},
			&cli.StringFlag{Name: "image", Usage: "with --k8s: the container `IMAGE` holding bursar-sweep"},
			&cli.StringFlag{Name: "pvc", Usage: "with --k8s: the `CLAIM` of the shared volume for --out", Value: "bursar-data"},
			&cli.StringFlag{Name: "mount", Usage: "with --k8s: where the volume is mounted (`PATH`); a relative --out is under it", Value: "/data"},
		},
		Action: func(c *cli.Context) error {
			job, err := parseClusterJob(c)
			if err != nil {
				return err
			}
			if c.Bool("k8s") {
				return writeK8sJobs(c, job)
			}
			binary := c.String("binary")
			if binary == "" {
				if binary, err = os.Executable(); err != nil {
					return fmt.Errorf("--binary: %w", err)
				}
				if slurmjob.UnderGoBuildDir(binary) {
					return fmt.Errorf("--binary: this bursar-sweep is %s, a temporary build of go run that is gone when it exits: run `make build` and use bin/bursar-sweep (or give --binary PATH)", binary)
				}
			}
			if binary, err = filepath.Abs(binary); err != nil {
				return err
			}
			workdir := c.String("workdir")
			if workdir == "" {
				if workdir, err = os.Getwd(); err != nil {
					return err
				}
			}
			if workdir, err = filepath.Abs(workdir); err != nil {
				return err
			}
			if c.Int("cpus-per-task") < 1 {
				return fmt.Errorf("--cpus-per-task must be at least 1")
			}
			for _, e := range c.StringSlice("sbatch") {
				if !strings.HasPrefix(e, "--") || strings.ContainsAny(e, "\n\r") {
					return fmt.Errorf("--sbatch %q: give one long sbatch option, such as --sbatch=--constraint=a100", e)
				}
			}
			sb := slurmjob.Sbatch{Partition: c.String("partition"), Time: c.String("time"), Account: c.String("account"),
				QoS: c.String("qos"), Mem: c.String("mem"), CPUs: c.Int("cpus-per-task"), Extra: c.StringSlice("sbatch")}
			_, err = fmt.Fprint(sweepStdout(c), slurmjob.Script(job, binary, workdir, sb))
			return err
		},
	}
}
