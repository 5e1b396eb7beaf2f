// The tools that start a broker wait with deadlines; whoever uses them waits the same way.
@_exported import Deadlines
