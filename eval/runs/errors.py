"""The one error eval's library code raises for a bad input or a run that cannot go on.

Its message is what the user reads: a command's `main()` catches it and exits with `error: MESSAGE`
(only commands exit). GridError (eval/grid/spec.py) is one, naming the grid file."""


class RunError(Exception):
    """A bad flag, config, tag, file or run state; the message says which and what to do."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run's questions: the finished ones are saved and its run ended KILLED, and the
    way to continue was printed. `python -m eval.run` exits 130; eval.grid stops starting cells."""


class RunFailed(RunError):
    """The run's questions failed (every one, the first ones alike, or the engine died): its MLflow run
    ends FAILED with `reason` in its eir.failure tag; the message adds how to run it again."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason
