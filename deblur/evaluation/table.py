"""The terminal table of an evaluation: PSNR / SSIM per image and method, and the means."""

from __future__ import annotations

from deblur.evaluation.report import EvaluationReport
from deblur.tables import aligned_table


def results_table(report: EvaluationReport, max_rows: int = 30) -> str:
    methods = report.methods()
    header = ["image", *methods]
    rows = []
    for image in report.images[:max_rows]:
        rows.append([image.name, *(_cell(image.psnr.get(m), image.ssim.get(m)) for m in methods)])
    psnr, ssim = report.mean("psnr"), report.mean("ssim")
    mean_row = [f"mean of {len(report.images)}", *(_cell(psnr.get(m), ssim.get(m)) for m in methods)]
    lines = ["PSNR dB / SSIM against the sharp image (higher is better)", *aligned_table(header, [*rows, mean_row])]
    if len(report.images) > max_rows:  # said just above the mean row, which covers every image
        lines.insert(-1, f"... {len(report.images) - max_rows} more in the JSON report")
    if "model" in psnr and "blurry" in psnr:
        how = f" (the model column is --method {report.method})" if report.method != "network" else ""
        lines.append(f"model vs blurry: {psnr['model'] - psnr['blurry']:+.2f} dB{how}")
    if report.aligned:
        aligned_psnr, aligned_ssim = report.mean("aligned_psnr"), report.mean("aligned_ssim")
        lines.append("at each one's best shift within 5 px (quarter pixels, 15 px border; Levin et al. 2009):")
        lines += aligned_table(
            ["", *methods],
            [[f"mean of {len(report.images)}", *(_cell(aligned_psnr.get(m), aligned_ssim.get(m)) for m in methods)]],
        )
        if "model" in aligned_psnr and "blurry" in aligned_psnr:
            lines.append(
                f"model vs blurry at the best shifts: {aligned_psnr['model'] - aligned_psnr['blurry']:+.2f} dB"
            )
    return "\n".join(lines)


def _cell(psnr: float | None, ssim: float | None) -> str:
    return "-" if psnr is None else f"{psnr:.2f} / {ssim:.3f}"
