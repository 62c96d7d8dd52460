import type { RgbImage } from './image.js';

/**
 * Image quality against a reference, exactly as test/fixtures/blend/README.md defines it,
 * so scores compare with the fixtures' baselines.
 */

/** A crop, in pixels. */
export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The cap PSNR reports for identical images. */
export const PSNR_CAP = 100;

const wholeImage = (image: RgbImage): Box => ({ x: 0, y: 0, width: image.width, height: image.height });

/** PSNR over R, G and B together, peak 255, in dB, capped at 100 (identical). */
export function psnr(a: RgbImage, b: RgbImage, box: Box = wholeImage(a)): number {
  let squares = 0;
  for (let y = box.y; y < box.y + box.height; y++) {
    for (let i = 3 * (y * a.width + box.x), end = i + 3 * box.width; i < end; i++) {
      const e = a.data[i]! - b.data[i]!;
      squares += e * e;
    }
  }
  const mse = squares / (box.width * box.height * 3);
  if (mse === 0) return PSNR_CAP;
  return Math.min(PSNR_CAP, 10 * Math.log10((255 * 255) / mse));
}

/**
 * SSIM (Wang et al. 2004) on BT.601 luma: Gaussian 11×11 window, sigma 1.5, K1 0.01, K2 0.03,
 * L 255, averaged over the positions where the window lies wholly inside the box. NaN when the
 * box is smaller than the window.
 */
export function ssim(a: RgbImage, b: RgbImage, box: Box = wholeImage(a)): number {
  const R = 5;
  const W = box.width, H = box.height;
  const ow = W - 2 * R, oh = H - 2 * R;
  if (ow <= 0 || oh <= 0) return NaN;
  const X = lumaOf(a, box), Y = lumaOf(b, box);
  const k = new Float64Array(2 * R + 1);
  let ksum = 0;
  for (let i = -R; i <= R; i++) ksum += k[i + R] = Math.exp(-(i * i) / (2 * 1.5 * 1.5));
  for (let i = 0; i < k.length; i++) k[i]! /= ksum;
  // horizontal pass (valid columns) of x, y, x², y², xy; then the vertical pass per position
  const hx = new Float64Array(ow * H), hy = new Float64Array(ow * H);
  const hxx = new Float64Array(ow * H), hyy = new Float64Array(ow * H), hxy = new Float64Array(ow * H);
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < ow; x++) {
      let s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0;
      for (let i = 0; i <= 2 * R; i++) {
        const p = X[y * W + x + i]!, q = Y[y * W + x + i]!, kk = k[i]!;
        s1 += kk * p;
        s2 += kk * q;
        s3 += kk * p * p;
        s4 += kk * q * q;
        s5 += kk * p * q;
      }
      const o = y * ow + x;
      hx[o] = s1;
      hy[o] = s2;
      hxx[o] = s3;
      hyy[o] = s4;
      hxy[o] = s5;
    }
  }
  const C1 = (0.01 * 255) ** 2, C2 = (0.03 * 255) ** 2;
  let total = 0;
  for (let y = 0; y < oh; y++) {
    for (let x = 0; x < ow; x++) {
      let mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
      for (let i = 0; i <= 2 * R; i++) {
        const o = (y + i) * ow + x, kk = k[i]!;
        mx += kk * hx[o]!;
        my += kk * hy[o]!;
        sxx += kk * hxx[o]!;
        syy += kk * hyy[o]!;
        sxy += kk * hxy[o]!;
      }
      const vx = sxx - mx * mx, vy = syy - my * my, cxy = sxy - mx * my;
      total += ((2 * mx * my + C1) * (2 * cxy + C2)) / ((mx * mx + my * my + C1) * (vx + vy + C2));
    }
  }
  return total / (ow * oh);
}

/** Shares of pixels with any channel ≤ 2 (dark) or ≥ 253 (bright), as the fixtures count clipping. */
export function clippedFractions(image: RgbImage): { dark: number; bright: number } {
  let dark = 0, bright = 0;
  const d = image.data, n = image.width * image.height;
  for (let i = 0; i < 3 * n; i += 3) {
    const r = d[i]!, g = d[i + 1]!, b = d[i + 2]!;
    if (r <= 2 || g <= 2 || b <= 2) dark++;
    if (r >= 253 || g >= 253 || b >= 253) bright++;
  }
  return { dark: dark / n, bright: bright / n };
}

function lumaOf(image: RgbImage, box: Box): Float64Array {
  const out = new Float64Array(box.width * box.height);
  for (let y = 0; y < box.height; y++) {
    for (let x = 0; x < box.width; x++) {
      const i = 3 * ((y + box.y) * image.width + (x + box.x));
      out[y * box.width + x] = 0.299 * image.data[i]! + 0.587 * image.data[i + 1]! + 0.114 * image.data[i + 2]!;
    }
  }
  return out;
}
