// The credits settings the credits tests start from: enabled, 2 credits a started MiB uploaded, 1 a GB
// sent, 0.5 a GB-day stored, a low-credit warning under 5, uploads refused at zero; `over` changes any.
import type { CreditsConfig } from '../../src/config/schema.js';

export const MIB = 1024 * 1024;

export function creditsConfig(over: Partial<CreditsConfig> = {}): CreditsConfig {
  return {
    enabled: true, freeMonthlyCredits: 0, lowCreditThreshold: 5, uploadCreditUnitBytes: MIB, uploadCreditsPerUnit: 2,
    transferCreditsPerGb: 1, storageCreditsPerGbDay: 0.5, atZero: 'refuse-uploads', deliveryGraceHours: 72, ...over,
  };
}
