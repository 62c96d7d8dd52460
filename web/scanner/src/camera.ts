/** QR codes from the camera: getUserMedia frames (rear camera preferred), read by jsQR on a canvas. */
import jsQR from 'jsqr';

const EVERY_MS = 120;
/** The same code seen again within this time is the same scan, not a second one. */
const SAME_CODE_MS = 3000;
const MAX_WIDTH = 640;

export class Camera {
  private stream: MediaStream | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private busy = false;
  private last = { code: '', at: 0 };
  private readonly canvas = document.createElement('canvas');

  constructor(
    private readonly video: HTMLVideoElement,
    private readonly found: (code: string) => Promise<void>,
  ) {}

  get running(): boolean {
    return this.stream !== null;
  }

  async start(): Promise<void> {
    if (this.stream) return;
    this.stream = await navigator.mediaDevices.getUserMedia({ audio: false, video: { facingMode: { ideal: 'environment' }, width: { ideal: 1280 } } });
    this.video.srcObject = this.stream;
    this.video.setAttribute('playsinline', '');
    this.video.muted = true;
    await this.video.play();
    this.tick();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const track of this.stream?.getTracks() ?? []) track.stop();
    this.stream = null;
    this.video.srcObject = null;
  }

  private tick = () => {
    this.timer = setTimeout(() => void this.read().finally(() => this.stream && this.tick()), EVERY_MS);
  };

  private async read(): Promise<void> {
    const { videoWidth, videoHeight } = this.video;
    if (this.busy || !videoWidth || !videoHeight) return;
    const scale = Math.min(1, MAX_WIDTH / videoWidth);
    const width = Math.round(videoWidth * scale);
    const height = Math.round(videoHeight * scale);
    this.canvas.width = width;
    this.canvas.height = height;
    const context = this.canvas.getContext('2d', { willReadFrequently: true });
    if (!context) return;
    context.drawImage(this.video, 0, 0, width, height);
    const qr = jsQR(context.getImageData(0, 0, width, height).data, width, height, { inversionAttempts: 'dontInvert' });
    if (!qr?.data) return;
    const now = Date.now();
    if (qr.data === this.last.code && now - this.last.at < SAME_CODE_MS) {
      this.last.at = now;
      return;
    }
    this.last = { code: qr.data, at: now };
    this.busy = true;
    try {
      await this.found(qr.data);
    } finally {
      this.busy = false;
    }
  }
}
