/**
 * The constants of the agreement test (deghost/agreement.ts says what each step does), shared by
 * its JavaScript (agreement.ts, agreement-reference.ts) and its WebAssembly (agreement-kernels.ts).
 */

/** The test runs on the thumbnail's step × step block means when its longest side is this many times step or more. */
export const AGREEMENT_SIDE = 500;
/** Half-width of the averaging window (pixels of the thumbnail). */
export const WINDOW = 2;
/** How many deviations of a static window's mean a disagreeing window lies above it. */
export const DISAGREE_DEVIATIONS = 5;
export const MEAN_ABS = Math.sqrt(2 / Math.PI);
export const DEVIATION_ABS = Math.sqrt(1 - 2 / Math.PI);
/** Share of the windows around a window above the level that must be above it too for it to disagree (a quarter: 7 of 25 away from the edges). */
export const MOSTLY = 0.25;
/** Growth of the disagreement and reach of the feathering (pixels of the thumbnail). */
export const FEATHER = 2;
/** Channel values at most LOW or at least HIGH are clipped. */
export const LOW = 2;
export const HIGH = 253;
/** The spread is measured per band of 2^BAND_SHIFT values (of the frame, and of the reference) … */
export const BAND_SHIFT = 4;
export const BANDS = 256 >> BAND_SHIFT;
/** … that holds at least BAND_PIXELS judged pixels, else on all of them. */
export const BAND_PIXELS = 256;
/** The least noise a set is taken to have (grey levels): the levels are whole. */
export const LEAST_NOISE = 1;
/** The spread is read off the lower quartile of |residual|, a normal's at 0.3186 σ. */
export const QUARTILE = 0.25;
export const QUARTILE_TO_SIGMA = 1 / 0.3186;
/** Residuals are counted in steps of 1 / RESIDUAL_STEPS of a value for their quantiles … */
export const RESIDUAL_STEPS = 8;
/** … in this many bins (the last one holds every larger residual). */
export const RESIDUAL_BINS = 256 * RESIDUAL_STEPS;
/** Windows are judged against others of like detail, in this many classes (agreement.ts `windowLevels`). */
export const DETAIL_CLASSES = 8;
/** About how many windows the quantiles of windowLevels are read from. */
export const QUANTILE_SAMPLE = 32768;
