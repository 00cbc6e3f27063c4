export const browserDir: string;
export const chromiumBinary: string;
export const fontConfigFile: string;
export function installTestBrowser(): Promise<string>;
