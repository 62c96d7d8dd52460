import { Type } from 'typebox';
import { PageQuery, pageSchema } from '../http/paging.js';
import { PathId, Timestamp } from '../schemas.js';

export const BlendUploadSchema = Type.Object(
  {
    id: Type.String({ maxLength: 31, description: 'Upload id: name it in `images` of `POST /v1/blend/start` in place of a URL.', examples: ['upl_01m80eg3tperaacsapew6ns732'] }),
    bytes: Type.Integer({ format: 'int64', minimum: 1, maximum: 1024 ** 3, description: 'Bytes stored (at most MONTAGE_BLEND_MAX_IMAGE_BYTES, itself at most 1 GiB).' }),
    width: Type.Integer({ format: 'int32', minimum: 1, maximum: 500_000_000, description: 'Pixels across, as the image header says (before EXIF orientation).' }),
    height: Type.Integer({ format: 'int32', minimum: 1, maximum: 500_000_000 }),
    format: Type.String({ maxLength: 8, description: 'As told by the first bytes: `jpeg`, `png`, `webp`, `gif`, `tiff` or `heif` (AVIF included).', examples: ['jpeg'] }),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$', maxLength: 64, description: 'Hex SHA-256 of the bytes stored, to check against the file sent.' }),
    expiresAt: { ...Timestamp, description: 'From then on the upload is gone: not listed, 404, refused by new jobs (MONTAGE_BLEND_UPLOAD_TTL after it was received).' },
    createdAt: Timestamp,
  },
  { $id: 'BlendUpload', additionalProperties: false },
);

export const BlendUploadPage = pageSchema('BlendUploadPage', BlendUploadSchema);

/** The body of `POST /v1/blend/uploads`, for the document: the route reads it as a stream. */
export const BlendUploadRequest = Type.Object(
  {
    file: Type.String({
      format: 'binary',
      maxLength: 1024 * 1024 * 1024,
      description: 'The image (JPEG, PNG, WebP, GIF, TIFF, AVIF or HEIF); at most MONTAGE_BLEND_MAX_IMAGE_BYTES bytes and MONTAGE_BLEND_MAX_PIXELS pixels. Other fields are ignored.',
    }),
  },
  { $id: 'BlendUploadRequest', additionalProperties: false },
);

export const UploadParams = Type.Object({ uploadId: PathId('Upload id (`upl_...`)') }, { additionalProperties: false });
export const ListUploadsQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });

export const uploadComponents = [BlendUploadSchema, BlendUploadPage, BlendUploadRequest];
