/// B2's table, goals and curves, from the scale runs and the restart runs.
extension RegistryScaleBench.Result {
    func section(restart: (process: Samples, inProcess: Samples), runs: Int) -> BenchSection {
        let bounds = RegistryScaleBench.bounds
        var section = BenchSection(
            id: "B2", title: "B2 Registry scale",
            method: """
                A Store takes 1,000,000 watches (250,000 customers × 4 of 1,000 SKUs, mode once) through \
                `subscribe`, then loses them all through `unsubscribe` in a random order. Time per operation is \
                taken over each decade of registry size (adds while the size grows through it, removes while it \
                shrinks through it). Memory per watch is the growth of glibc's heap in use (`mallinfo2`) over the \
                1,000,000 watches. Restart: a data directory with 1,000,000 watches written straight through \
                `StoreDatabase`; `restock serve` started on it until its retained status says online, and the \
                restore alone in process. \(runs) runs.
                """)
        section.table = MarkdownTable(header: ["registry size", "ns per add", "ns per remove"])
        for window in 0..<(bounds.count - 1) {
            section.table.add([
                "\(Figure.grouped(bounds[window] + 1))–\(Figure.grouped(bounds[window + 1]))",
                addNanoseconds[window].formatted(), removeNanoseconds[window].formatted(),
            ])
        }
        let addGrowth = addNanoseconds.last!.ratio(to: addNanoseconds.first!)
        let removeGrowth = removeNanoseconds.last!.ratio(to: removeNanoseconds.first!)
        section.notes = [
            "Memory: **\(bytesPerWatch.formatted()) bytes per watch** in the in-process registry; "
                + "after removing all of them the heap is back within \(Figure.format(bytesLeft.median / 1_024)) KiB of where it started.",
            "Restart with 1,000,000 watches in the database: `restock serve` online in **\(restart.process.formatted()) s**; "
                + "of that, opening the database and rebuilding the registry in process takes \(restart.inProcess.formatted()) s.",
        ]
        section.goals = [
            Goal(
                text: "B2 time per add flat from 1,000 to 1,000,000 (last decade ≤ 2× the first)",
                figure: "\(Figure.format(addGrowth.median))× (\(addNanoseconds.first!.formatted()) → \(addNanoseconds.last!.formatted()) ns)",
                isMet: addGrowth.median <= 2),
            Goal(
                text: "B2 time per remove flat from 1,000 to 1,000,000 (last decade ≤ 2× the first)",
                figure: "\(Figure.format(removeGrowth.median))× (\(removeNanoseconds.first!.formatted()) → \(removeNanoseconds.last!.formatted()) ns)",
                isMet: removeGrowth.median <= 2),
            Goal(
                text: "B2 restart with 1,000,000 watches, until online: ≤ 1.5 s",
                figure: "\(restart.process.formatted()) s (of which the in-process restore \(restart.inProcess.formatted()) s)",
                isMet: restart.process.median <= 1.5),
        ]
        let sizes = bounds.dropFirst().map(Double.init)
        section.curves = [
            Curve(plot: "B2", name: "add (subscribe)", points: Array(zip(sizes, addNanoseconds.map(\.median)))),
            Curve(plot: "B2", name: "remove (unsubscribe)", points: Array(zip(sizes, removeNanoseconds.map(\.median)))),
        ]
        return section
    }
}
