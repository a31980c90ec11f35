import type { SvcError, SvcErrorCode } from './types';

export function svcError(code: SvcErrorCode, message: string, status?: number, response?: unknown): SvcError {
  const error = new Error(`svc: ${message}`) as SvcError;
  error.name = 'SvcError';
  error.code = code;
  if (status !== undefined) error.status = status;
  if (response !== undefined) error.response = response;
  return error;
}
