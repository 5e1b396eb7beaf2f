import Foundation

/// The scaling curves as an SVG: one panel per plot name, log scales on both axes, a legend per panel.
struct ScalingPlot {
    struct Panel {
        let name: String
        let title: String
        let xLabel: String
        let yLabel: String
    }

    let panels: [Panel]
    let curves: [Curve]

    private static let palette = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02"]
    private static let size = (width: 420.0, height: 330.0)
    private static let margin = (left: 70.0, right: 15.0, top: 40.0, bottom: 120.0)

    var svg: String {
        let width = Self.size.width * Double(panels.count)
        var parts = [
            ##"<svg xmlns="http://www.w3.org/2000/svg" width="\##(Int(width))" height="\##(Int(Self.size.height))" font-family="sans-serif" font-size="11">"##,
            ##"<rect width="100%" height="100%" fill="white"/>"##,
        ]
        for (index, panel) in panels.enumerated() {
            parts.append(##"<g transform="translate(\##(Double(index) * Self.size.width),0)">"##)
            parts += draw(panel, curves: curves.filter { $0.plot == panel.name && !$0.points.isEmpty })
            parts.append("</g>")
        }
        parts.append("</svg>")
        return parts.joined(separator: "\n")
    }

    private func draw(_ panel: Panel, curves: [Curve]) -> [String] {
        let points = curves.flatMap(\.points).filter { $0.x > 0 && $0.y > 0 }
        guard !points.isEmpty else { return [] }
        let xRange = Self.decades(points.map(\.x)), yRange = Self.decades(points.map(\.y))
        let plotWidth = Self.size.width - Self.margin.left - Self.margin.right
        let plotHeight = Self.size.height - Self.margin.top - Self.margin.bottom
        func x(_ value: Double) -> Double {
            Self.margin.left + (log10(value) - xRange.lowerBound) / (xRange.upperBound - xRange.lowerBound) * plotWidth
        }
        func y(_ value: Double) -> Double {
            Self.margin.top + plotHeight - (log10(value) - yRange.lowerBound) / (yRange.upperBound - yRange.lowerBound) * plotHeight
        }
        var parts = [##"<text x="\##(Self.size.width / 2)" y="18" text-anchor="middle" font-size="13" font-weight="bold">\##(Self.escape(panel.title))</text>"##]
        for decade in Int(xRange.lowerBound)...Int(xRange.upperBound) {
            let position = x(pow(10, Double(decade)))
            parts.append(##"<line x1="\##(position)" y1="\##(Self.margin.top)" x2="\##(position)" y2="\##(Self.margin.top + plotHeight)" stroke="#ddd"/>"##)
            parts.append(##"<text x="\##(position)" y="\##(Self.margin.top + plotHeight + 14)" text-anchor="middle">\##(Self.power(decade))</text>"##)
        }
        for decade in Int(yRange.lowerBound)...Int(yRange.upperBound) {
            let position = y(pow(10, Double(decade)))
            parts.append(##"<line x1="\##(Self.margin.left)" y1="\##(position)" x2="\##(Self.margin.left + plotWidth)" y2="\##(position)" stroke="#ddd"/>"##)
            parts.append(##"<text x="\##(Self.margin.left - 5)" y="\##(position + 4)" text-anchor="end">\##(Self.power(decade))</text>"##)
        }
        parts.append(##"<rect x="\##(Self.margin.left)" y="\##(Self.margin.top)" width="\##(plotWidth)" height="\##(plotHeight)" fill="none" stroke="#444"/>"##)
        parts.append(##"<text x="\##(Self.margin.left + plotWidth / 2)" y="\##(Self.margin.top + plotHeight + 30)" text-anchor="middle">\##(Self.escape(panel.xLabel))</text>"##)
        parts.append(##"<text transform="translate(16,\##(Self.margin.top + plotHeight / 2)) rotate(-90)" text-anchor="middle">\##(Self.escape(panel.yLabel))</text>"##)
        for (index, curve) in curves.enumerated() {
            let color = Self.palette[index % Self.palette.count]
            let path = curve.points.filter { $0.x > 0 && $0.y > 0 }.map { "\(x($0.x)),\(y($0.y))" }
            parts.append(##"<polyline points="\##(path.joined(separator: " "))" fill="none" stroke="\##(color)" stroke-width="2"/>"##)
            for point in path {
                let xy = point.split(separator: ",")
                parts.append(##"<circle cx="\##(xy[0])" cy="\##(xy[1])" r="3" fill="\##(color)"/>"##)
            }
            let legendY = Self.margin.top + plotHeight + 48 + Double(index) * 15
            parts.append(##"<line x1="\##(Self.margin.left)" y1="\##(legendY - 4)" x2="\##(Self.margin.left + 20)" y2="\##(legendY - 4)" stroke="\##(color)" stroke-width="2"/>"##)
            parts.append(##"<text x="\##(Self.margin.left + 26)" y="\##(legendY)">\##(Self.escape(curve.name))</text>"##)
        }
        return parts
    }

    /// The whole decades around `values`, as log10 bounds.
    private static func decades(_ values: [Double]) -> ClosedRange<Double> {
        let low = floor(log10(values.min()!)), high = ceil(log10(values.max()!))
        return low...(high > low ? high : low + 1)
    }

    private static func power(_ exponent: Int) -> String {
        switch exponent {
        case 0: "1"
        case 1: "10"
        case 2: "100"
        case 3: "1k"
        case 4: "10k"
        case 5: "100k"
        case 6: "1M"
        case 7: "10M"
        default: "1e\(exponent)"
        }
    }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
